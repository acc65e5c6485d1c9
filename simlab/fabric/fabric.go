// Package fabric is the simulated Stardust fabric: it serves the cell-level
// model (simlab/stardustmodel) and the packet-switched fabric the paper
// compares Stardust with over TCP on 127.0.0.1, in the protocol of
// dut/fabric (newline-delimited JSON, one fabric per connection), so that
// a recipe's model mode reaches the model through a device, as its bench
// mode reaches the switches, and never by import.
//
// Every op is an entry of ops, as simlab/tofino keeps the agent's: the
// fabric is configured from the Stardust contract's Fabric and
// PacketFabricOpts (p4/stardust/fabric.go), seeded from the request, and
// stepped only when asked, so a run is deterministic for a seed whatever
// the wire's timing.
package fabric

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	sd "testbed/p4/stardust"
	sm "testbed/simlab/stardustmodel"
	"testbed/simlab/wire"
)

// maxLine bounds a request line.
const maxLine = 1 << 20

// Server accepts connections on a loopback port; each holds one fabric.
type Server struct {
	faults *wire.Faults
	done   chan struct{}
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

// Listen starts a server on addr (127.0.0.1:0 for any free port).
func Listen(ctx context.Context, addr string) (*Server, error) { return ListenFaults(ctx, addr, nil) }

// ListenFaults starts a server that consults f before each reply: a drop
// closes the connection, a stall leaves the request unanswered, a garble
// answers a line that is not JSON, a delay answers late, and a device
// error fails a request that changes the fabric (open, run, add_flow,
// set_*) as the fabric reports any error.
func ListenFaults(ctx context.Context, addr string, f *wire.Faults) (*Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("simulated fabric: listen %s: %w", addr, err)
	}
	if f == nil {
		f = &wire.Faults{}
	}
	s := &Server{faults: f, done: make(chan struct{}), ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Address is the server's address in the inventory's form.
func (s *Server) Address() string { return "tcp://" + s.ln.Addr().String() }

// Close stops the server and closes its connections.
func (s *Server) Close() error {
	err := s.ln.Close()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

type request struct {
	ID   int64           `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

// changes are the ops that change the fabric: the ones an injected
// device error fails.
var changes = map[string]bool{"open": true, "run": true, "run_until_done": true, "watch": true, "add_flow": true,
	"set_link": true, "set_fe": true, "set_link_error_rate": true}

// failure takes a pending device error for an op that changes the fabric.
func failure(f *wire.Faults, op string) (wire.DeviceError, bool) {
	if !changes[op] {
		return wire.DeviceError{}, false
	}
	return f.TakeFailure()
}

func (srv *Server) serve(c net.Conn) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	w := bufio.NewWriter(c)
	var s session
	f := srv.faults
	for sc.Scan() {
		var req request
		var res any
		err := json.Unmarshal(sc.Bytes(), &req)
		if f.TakeDrop() {
			return
		}
		if f.TakeStall() {
			continue
		}
		if d := f.Delay(); d > 0 {
			select {
			case <-time.After(d):
			case <-srv.done:
				return
			}
		}
		if f.TakeGarble() {
			if _, err := c.Write([]byte("\x00\xffgarbled\n")); err != nil {
				return
			}
			continue
		}
		if err != nil {
			err = fmt.Errorf("request is not JSON: %v", err)
		} else if de, hit := failure(f, req.Op); hit {
			err = fmt.Errorf("%s: device error %d: %s", req.Op, de.Code, de.Message)
		} else {
			res, err = s.handle(req)
		}
		resp := map[string]any{"id": req.ID, "ok": err == nil}
		if err != nil {
			resp["error"] = err.Error()
		} else {
			if res == nil {
				res = struct{}{}
			}
			resp["result"] = res
		}
		out, _ := json.Marshal(resp)
		w.Write(append(out, '\n'))
		if w.Flush() != nil {
			return
		}
	}
}

// session is one connection's fabric: the cell model or the packet fabric,
// and the flows added to it.
type session struct {
	c     sd.Fabric
	m     *sm.Model
	pf    *sm.PacketFabric
	flows int
}

// op is an entry of ops: its handler decodes its own arguments.
type op func(s *session, args json.RawMessage) (any, error)

var ops = map[string]op{
	"identity":            (*session).identity,
	"open":                (*session).open,
	"run":                 (*session).run,
	"stats":               (*session).stats,
	"add_flow":            (*session).addFlow,
	"flow":                (*session).flow,
	"set_link":            (*session).setLink,
	"set_fe":              (*session).setFE,
	"set_link_error_rate": (*session).setLinkErrorRate,
	"link":                (*session).link,
	"fa_link":             (*session).faLink,
	"run_until_done":      (*session).runUntilDone,
	"flows":               (*session).allFlows,
	"watch":               (*session).watch,
}

func (s *session) handle(req request) (any, error) {
	h, ok := ops[req.Op]
	if !ok {
		return nil, fmt.Errorf("unknown op %q", req.Op)
	}
	if req.Op != "open" && req.Op != "identity" && s.m == nil && s.pf == nil {
		return nil, fmt.Errorf("%s: no fabric is open on this connection (open first)", req.Op)
	}
	res, err := h(s, req.Args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.Op, err)
	}
	return res, nil
}

// identity names the device: the simulated lab's fabric, and what it runs.
func (s *session) identity(json.RawMessage) (any, error) {
	return map[string]string{"vendor": "testbed", "model": "simulated Stardust fabric (cell-level model, simlab/stardustmodel)", "serial": "n/a", "firmware": "1"}, nil
}

func decode(args json.RawMessage, v any) error {
	if len(args) == 0 {
		return errors.New("missing arguments")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

func (s *session) open(args json.RawMessage) (any, error) {
	var a struct {
		Kind   string              `json:"kind"` // "cells" or "packets"
		Fabric sd.Fabric           `json:"fabric"`
		Packet sd.PacketFabricOpts `json:"packet"`
		Seed   [2]uint64           `json:"seed"`
	}
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(a.Seed[0], a.Seed[1]))
	*s = session{c: a.Fabric}
	switch a.Kind {
	case "cells":
		m, err := sm.New(a.Fabric, r)
		if err != nil {
			return nil, err
		}
		s.m = m
	case "packets":
		pf, err := sm.NewPacketFabric(a.Fabric, a.Packet, r)
		if err != nil {
			return nil, err
		}
		s.pf = pf
	default:
		return nil, fmt.Errorf("kind %q: expected cells or packets", a.Kind)
	}
	return nil, nil
}

func (s *session) now() int64 {
	if s.m != nil {
		return s.m.Now()
	}
	return s.pf.Now()
}

func (s *session) run(args json.RawMessage) (any, error) {
	var a struct {
		Slots int64 `json:"slots"`
	}
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	if a.Slots < 0 {
		return nil, fmt.Errorf("slots %d: expected 0 or more", a.Slots)
	}
	if s.m != nil {
		s.m.Run(a.Slots)
	} else {
		s.pf.Run(a.Slots)
	}
	return map[string]int64{"now": s.now()}, nil
}

// allDone reports whether every flow added has delivered its last byte.
func (s *session) allDone() bool {
	for id := 0; id < s.flows; id++ {
		if _, done := s.flowDone(id); !done {
			return false
		}
	}
	return true
}

func (s *session) flowDone(id int) (float64, bool) {
	if s.m != nil {
		return s.m.FlowDone(id)
	}
	return s.pf.FlowDone(id)
}

func (s *session) step(n int64) {
	if s.m != nil {
		s.m.Run(n)
	} else {
		s.pf.Run(n)
	}
}

// runUntilDone steps the fabric step slots at a time while it is before
// slot until and some flow is not done: a run to the last byte of every
// flow, asked once rather than a slot at a time.
func (s *session) runUntilDone(args json.RawMessage) (any, error) {
	var a struct {
		Until int64 `json:"until"`
		Step  int64 `json:"step"`
	}
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	if a.Step < 1 || a.Until < 0 {
		return nil, fmt.Errorf("until %d, step %d: expected a slot (0 or more) and a step of at least 1", a.Until, a.Step)
	}
	for s.now() < a.Until && !s.allDone() {
		s.step(a.Step)
	}
	return map[string]any{"now": s.now(), "done": s.allDone()}, nil
}

// stats are the cell model's statistics, or the packet fabric's counters.
func (s *session) stats(json.RawMessage) (any, error) {
	if s.m != nil {
		return s.m.S, nil
	}
	return map[string]int64{"now": s.pf.Now(), "sent": s.pf.Sent, "drops": s.pf.Drops, "retransmits": s.pf.Retransmits}, nil
}

func (s *session) addFlow(args json.RawMessage) (any, error) {
	var a struct {
		Src         int   `json:"src"`
		Port        int   `json:"port"`
		Prio        int   `json:"prio"`
		Bytes       int64 `json:"bytes"`
		PacketBytes int   `json:"packet_bytes"`
	}
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	var id int
	var err error
	if s.m != nil {
		id, err = s.m.AddFlow(a.Src, a.Port, a.Prio, a.Bytes, a.PacketBytes)
	} else {
		id, err = s.pf.AddFlowClass(a.Src, a.Port, a.Prio, a.Bytes, a.PacketBytes)
	}
	if err != nil {
		return nil, err
	}
	s.flows = max(s.flows, id+1)
	return map[string]int{"id": id}, nil
}

// flowState is a flow's progress as flow and flows answer it.
func (s *session) flowState(id int) map[string]any {
	res := map[string]any{}
	if s.m != nil {
		res["delivered"] = s.m.FlowDelivered(id)
	} else {
		res["delivered"] = s.pf.FlowDelivered(id)
		res["drops"] = s.pf.FlowDrops(id)
	}
	at, done := s.flowDone(id)
	res["done"], res["done_slot"] = done, at
	return res
}

// allFlows is every flow's state, in the order they were added.
func (s *session) allFlows(json.RawMessage) (any, error) {
	out := make([]map[string]any, s.flows)
	for id := range out {
		out[id] = s.flowState(id)
	}
	return out, nil
}

func (s *session) flow(args json.RawMessage) (any, error) {
	var a struct {
		ID int `json:"id"`
	}
	if err := decode(args, &a); err != nil {
		return nil, err
	}
	if a.ID < 0 || a.ID >= s.flows {
		return nil, fmt.Errorf("flow %d: the fabric has flows 0..%d", a.ID, s.flows-1)
	}
	return s.flowState(a.ID), nil
}

// cells is the cell model, for the ops only it has.
func (s *session) cells() (*sm.Model, error) {
	if s.m == nil {
		return nil, errors.New("the packet fabric has no Stardust links or FEs (open kind cells)")
	}
	return s.m, nil
}

func (s *session) setLink(args json.RawMessage) (any, error) {
	var a struct {
		Link int  `json:"link"`
		Up   bool `json:"up"`
	}
	m, err := s.cells()
	if err == nil {
		err = decode(args, &a)
	}
	if err != nil {
		return nil, err
	}
	return nil, m.SetLink(a.Link, a.Up)
}

func (s *session) setFE(args json.RawMessage) (any, error) {
	var a struct {
		Tier int  `json:"tier"`
		FE   int  `json:"fe"`
		Up   bool `json:"up"`
	}
	m, err := s.cells()
	if err == nil {
		err = decode(args, &a)
	}
	if err != nil {
		return nil, err
	}
	return nil, m.SetFE(a.Tier, a.FE, a.Up)
}

func (s *session) setLinkErrorRate(args json.RawMessage) (any, error) {
	var a struct {
		Link      int     `json:"link"`
		Rate      float64 `json:"rate"`
		Threshold float64 `json:"threshold"`
	}
	m, err := s.cells()
	if err == nil {
		err = decode(args, &a)
	}
	if err != nil {
		return nil, err
	}
	return nil, m.SetLinkErrorRate(a.Link, a.Rate, a.Threshold)
}

// link is what the FA at a link's receiving end knows of it.
func (s *session) link(args json.RawMessage) (any, error) {
	var a struct {
		Link int `json:"link"`
	}
	m, err := s.cells()
	if err == nil {
		err = decode(args, &a)
	}
	if err != nil {
		return nil, err
	}
	if a.Link < 0 || a.Link >= len(m.S.UplinkCells) {
		return nil, fmt.Errorf("link %d: the FA-FE links are 0..%d", a.Link, len(m.S.UplinkCells)-1)
	}
	return map[string]any{"valid": m.LinkValid(a.Link), "corrupted": m.LinkCorrupted(a.Link), "faulty_periods": m.LinkFaultyPeriods(a.Link)}, nil
}

// faLink is FA fa's link j: its number and the FE at its far end, and
// whether fa's table lets it send cells for FA dst on it (dst < 0: not
// asked).
func (s *session) faLink(args json.RawMessage) (any, error) {
	var a struct {
		FA  int `json:"fa"`
		J   int `json:"j"`
		Dst int `json:"dst"`
	}
	m, err := s.cells()
	if err == nil {
		err = decode(args, &a)
	}
	if err != nil {
		return nil, err
	}
	c := s.c
	if a.FA < 0 || a.FA >= c.FAs || a.J < 0 || a.J >= c.LinksPerFA || a.Dst >= c.FAs {
		return nil, fmt.Errorf("FA %d link %d to FA %d: the fabric has FAs 0..%d of links 0..%d", a.FA, a.J, a.Dst, c.FAs-1, c.LinksPerFA-1)
	}
	res := map[string]any{"link": m.FALink(a.FA, a.J), "fe": m.LinkFE(a.FA, a.J)}
	if a.Dst >= 0 {
		res["reaches"] = m.FAReaches(a.FA, a.J, a.Dst)
	}
	return res, nil
}

// reachKey is a watched reach: whether FA FA's table lets it send cells
// for FA Dst on its link J.
type reachKey struct {
	FA  int `json:"fa"`
	J   int `json:"j"`
	Dst int `json:"dst"`
}

// watchState is what watch follows slot by slot: the watched links'
// validity, the watched reaches, and the cells a failure lost (on a dead
// link or FE, with no route, or corrupted).
type watchState struct {
	Slot  int64  `json:"slot"`
	Valid []bool `json:"valid"`
	Reach []bool `json:"reach"`
	Lost  int64  `json:"lost"`
}

// watchBin is a sample at a bin boundary: the slot, the packet bytes that
// have reached their destination FA and the failure-lost cells so far.
type watchBin struct {
	Slot         int64 `json:"slot"`
	BytesArrived int64 `json:"bytes_arrived"`
	Lost         int64 `json:"lost"`
}

// watch steps a cell fabric slot by slot for slots slots and reports,
// without a request per slot, what a recipe watching a failure asks after
// each: the state before the run, every slot after which a watched link's
// validity, a watched reach or the failure-lost cells changed (with the
// new state), and a sample at every slot a whole number of bins after
// origin.
func (s *session) watch(args json.RawMessage) (any, error) {
	var a struct {
		Slots  int64      `json:"slots"`
		Origin int64      `json:"origin"`
		Bin    int64      `json:"bin"`
		Links  []int      `json:"links"`
		Reach  []reachKey `json:"reach"`
	}
	m, err := s.cells()
	if err == nil {
		err = decode(args, &a)
	}
	if err != nil {
		return nil, err
	}
	if a.Slots < 0 || a.Bin < 1 {
		return nil, fmt.Errorf("slots %d, bin %d: expected 0 or more slots and a bin of at least 1", a.Slots, a.Bin)
	}
	for _, l := range a.Links {
		if l < 0 || l >= len(m.S.UplinkCells) {
			return nil, fmt.Errorf("link %d: the FA-FE links are 0..%d", l, len(m.S.UplinkCells)-1)
		}
	}
	c := s.c
	for _, r := range a.Reach {
		if r.FA < 0 || r.FA >= c.FAs || r.J < 0 || r.J >= c.LinksPerFA || r.Dst < 0 || r.Dst >= c.FAs {
			return nil, fmt.Errorf("FA %d link %d to FA %d: the fabric has FAs 0..%d of links 0..%d", r.FA, r.J, r.Dst, c.FAs-1, c.LinksPerFA-1)
		}
	}
	state := func() watchState {
		w := watchState{Slot: m.Now(), Valid: make([]bool, len(a.Links)), Reach: make([]bool, len(a.Reach)),
			Lost: m.S.CellsLostFailed + m.S.CellsNoRoute + m.S.CellsCorrupted}
		for i, l := range a.Links {
			w.Valid[i] = m.LinkValid(l)
		}
		for i, r := range a.Reach {
			w.Reach[i] = m.FAReaches(r.FA, r.J, r.Dst)
		}
		return w
	}
	res := struct {
		Now     int64        `json:"now"`
		Start   watchState   `json:"start"`
		Changes []watchState `json:"changes"`
		Bins    []watchBin   `json:"bins"`
	}{Start: state(), Changes: []watchState{}, Bins: []watchBin{}}
	prev := res.Start
	for end := m.Now() + a.Slots; m.Now() < end; {
		m.Run(1)
		w := state()
		if w.Lost != prev.Lost || !slices.Equal(w.Valid, prev.Valid) || !slices.Equal(w.Reach, prev.Reach) {
			res.Changes = append(res.Changes, w)
			prev = w
		}
		if (m.Now()-a.Origin)%a.Bin == 0 {
			res.Bins = append(res.Bins, watchBin{Slot: m.Now(), BytesArrived: m.S.BytesArrived, Lost: w.Lost})
		}
	}
	res.Now = m.Now()
	return res, nil
}
