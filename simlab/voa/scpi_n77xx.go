package voa

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"time"

	"testbed/simlab/wire/scpi"
)

// KeysightServer emulates a Keysight N776xA multi-channel attenuator on raw
// SCPI over TCP (port 5025 on the real instrument), over a World VOA. Its
// commands are in scpi_n77xx_cmds.go, on the shared SCPI core
// (simlab/wire/scpi): slots as the model numbers them, the error queue,
// common commands, relative headers, MIN|MAX|DEF and unit suffixes. Like
// the instrument, it powers up with every shutter closed.
type KeysightServer struct {
	voa    *world.VOA
	faults *wire.Faults

	mu    sync.Mutex
	unitW map[int]bool
	srv   wire.ConnServer
	scpi  *scpi.Instrument
}

// NewKeysightServer serves v; faults may be nil.
func NewKeysightServer(v *world.VOA, faults *wire.Faults) *KeysightServer {
	if faults == nil {
		faults = &wire.Faults{}
	}
	s := &KeysightServer{voa: v, faults: faults, unitW: map[int]bool{}}
	s.scpi = newKeysightSCPI(s)
	// Power-on: the shutters are closed, as the instrument comes up unless
	// :OUTPut:STATe:APOWeron was saved ON (N7744-90C, The OUTput subtree).
	for _, ch := range v.Channels {
		ch.SetShutter(false)
	}
	return s
}

// Start listens on addr (e.g. "127.0.0.1:0").
func (s *KeysightServer) Start(addr string) error { return s.srv.Start(addr, s.serve) }

// Addr is the address a driver dials: tcp://127.0.0.1:port.
func (s *KeysightServer) Addr() string { return "tcp://" + s.srv.Addr() }

// Close stops the server and waits for its goroutines.
func (s *KeysightServer) Close() error { return s.srv.Close() }

func (s *KeysightServer) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if s.faults.TakeDrop() {
			return
		}
		stall := s.faults.TakeStall()
		replies := s.execLine(line)
		if stall || len(replies) == 0 {
			continue
		}
		if d := s.faults.Delay(); d > 0 {
			time.Sleep(d)
		}
		out := strings.Join(replies, ";")
		if s.faults.TakeGarble() {
			out = "\x15#\xff?garbled\x00"
		}
		if _, err := c.Write([]byte(out + "\n")); err != nil {
			return
		}
	}
}

// execLine runs one program message on the SCPI core; it returns the
// response message, if any.
func (s *KeysightServer) execLine(line string) []string {
	if r, ok := s.scpi.Exec(line); ok {
		return []string{r}
	}
	return nil
}

// waitSettled blocks until no channel is moving (what *OPC? waits for).
func (s *KeysightServer) waitSettled() {
	for {
		var longest time.Duration
		for _, ch := range s.voa.Channels {
			longest = max(longest, ch.SettleTime())
		}
		if longest == 0 {
			return
		}
		time.Sleep(longest)
	}
}
