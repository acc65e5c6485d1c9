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
	"sync"

	sd "testbed/p4/stardust"
	sm "testbed/simlab/stardustmodel"
)

// maxLine bounds a request line.
const maxLine = 1 << 20

// Server accepts connections on a loopback port; each holds one fabric.
type Server struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// Listen starts a server on addr (127.0.0.1:0 for any free port).
func Listen(ctx context.Context, addr string) (*Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("simulated fabric: listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Address is the server's address in the inventory's form.
func (s *Server) Address() string { return "tcp://" + s.ln.Addr().String() }

// Close stops the server and closes its connections.
func (s *Server) Close() error {
	err := s.ln.Close()
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
			serve(c)
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

func serve(c net.Conn) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	w := bufio.NewWriter(c)
	var s session
	for sc.Scan() {
		var req request
		var res any
		err := json.Unmarshal(sc.Bytes(), &req)
		if err != nil {
			err = fmt.Errorf("request is not JSON: %v", err)
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
	res := map[string]any{}
	var at float64
	var done bool
	if s.m != nil {
		at, done = s.m.FlowDone(a.ID)
		res["delivered"] = s.m.FlowDelivered(a.ID)
	} else {
		at, done = s.pf.FlowDone(a.ID)
		res["delivered"] = s.pf.FlowDelivered(a.ID)
		res["drops"] = s.pf.FlowDrops(a.ID)
	}
	res["done"], res["done_slot"] = done, at
	return res, nil
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
