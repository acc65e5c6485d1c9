package voa

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"time"
)

// KeysightServer emulates a Keysight N776xA multi-channel attenuator on raw
// SCPI over TCP (port 5025 on the real instrument), over a World VOA.
//
// Implemented: *IDN? *CLS *RST *OPC? *OPC *WAI, :SYSTem:ERRor[:NEXT]?,
// :INPut<n>:ATTenuation[?] (value with optional dB, or MIN|MAX|DEF),
// :INPut<n>:ATTenuation:SPEed[?], :INPut<n>:WAVelength[?] (NM or M; the
// query answers in metres), :INPut<n>:OFFSet[?], :OUTPut<n>[:STATe][?],
// :SENSe<n>:POWer:UNIT[?], :FETCh<n>:POWer? and :READ<n>:POWer?. Headers
// are case-insensitive in short or long form, a leading colon is optional,
// several commands may share a line separated by ';', set commands answer
// nothing, and the replies of the queries of one line are joined by ';'.
// Errors go to a FIFO error queue of 30 entries (-113 undefined header,
// -222 data out of range, -224 illegal parameter value, -350 queue
// overflow).
type KeysightServer struct {
	voa    *world.VOA
	faults *wire.Faults

	mu      sync.Mutex
	errq    []string
	unitW   map[int]bool
	ln      net.Listener
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
	closing bool
}

// NewKeysightServer serves v; faults may be nil.
func NewKeysightServer(v *world.VOA, faults *wire.Faults) *KeysightServer {
	if faults == nil {
		faults = &wire.Faults{}
	}
	return &KeysightServer{voa: v, faults: faults, unitW: map[int]bool{}, conns: map[net.Conn]bool{}}
}

// Start listens on addr (e.g. "127.0.0.1:0").
func (s *KeysightServer) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closing {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.conns[c] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
			}()
		}
	}()
	return nil
}

// Addr is the address a driver dials: tcp://127.0.0.1:port.
func (s *KeysightServer) Addr() string { return "tcp://" + s.ln.Addr().String() }

// Close stops the server and waits for its goroutines.
func (s *KeysightServer) Close() error {
	s.mu.Lock()
	s.closing = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	s.wg.Wait()
	return err
}

func (s *KeysightServer) serve(c net.Conn) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
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

func (s *KeysightServer) pushError(code int, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := fmt.Sprintf("%+d,%q", code, text)
	if len(s.errq) >= 30 {
		s.errq[len(s.errq)-1] = `-350,"Queue overflow"`
		return
	}
	s.errq = append(s.errq, e)
}

func (s *KeysightServer) popError() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errq) == 0 {
		return `+0,"No error"`
	}
	e := s.errq[0]
	s.errq = s.errq[1:]
	return e
}

// mnemonic is one header element: short and long forms.
type mnemonic struct{ short, long string }

// match reports whether word (upper case, suffix stripped) is the short or long form.
func (m mnemonic) match(w string) bool { return w == m.short || w == m.long }

var (
	mINP  = mnemonic{"INP", "INPUT"}
	mATT  = mnemonic{"ATT", "ATTENUATION"}
	mSPE  = mnemonic{"SPE", "SPEED"}
	mWAV  = mnemonic{"WAV", "WAVELENGTH"}
	mOFFS = mnemonic{"OFFS", "OFFSET"}
	mOUTP = mnemonic{"OUTP", "OUTPUT"}
	mSTAT = mnemonic{"STAT", "STATE"}
	mSENS = mnemonic{"SENS", "SENSE"}
	mPOW  = mnemonic{"POW", "POWER"}
	mUNIT = mnemonic{"UNIT", "UNIT"}
	mFETC = mnemonic{"FETC", "FETCH"}
	mREAD = mnemonic{"READ", "READ"}
	mSYST = mnemonic{"SYST", "SYSTEM"}
	mERR  = mnemonic{"ERR", "ERROR"}
	mNEXT = mnemonic{"NEXT", "NEXT"}
)

// word is a parsed header element.
type word struct {
	name   string
	suffix int // 0 if absent
}

func parseHeader(h string) ([]word, bool) {
	h = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(h)), ":")
	var out []word
	for _, part := range strings.Split(h, ":") {
		i := len(part)
		for i > 0 && part[i-1] >= '0' && part[i-1] <= '9' {
			i--
		}
		w := word{name: part[:i]}
		if i < len(part) {
			n, err := strconv.Atoi(part[i:])
			if err != nil {
				return nil, false
			}
			w.suffix = n
		}
		if w.name == "" {
			return nil, false
		}
		out = append(out, w)
	}
	return out, true
}

func matches(ws []word, ms ...mnemonic) bool {
	if len(ws) != len(ms) {
		return false
	}
	for i := range ws {
		if !ms[i].match(ws[i].name) {
			return false
		}
	}
	return true
}

// execLine runs every command of one line; it returns the query replies.
func (s *KeysightServer) execLine(line string) []string {
	var replies []string
	for _, cmd := range strings.Split(line, ";") {
		cmd = strings.TrimSpace(cmd)
		if cmd == "" {
			continue
		}
		header, arg, _ := strings.Cut(cmd, " ")
		arg = strings.TrimSpace(arg)
		query := strings.HasSuffix(header, "?")
		header = strings.TrimSuffix(header, "?")
		if r, ok := s.exec(header, arg, query); ok && query {
			replies = append(replies, r)
		}
	}
	return replies
}

func (s *KeysightServer) channel(n int) (*world.VOAChannel, bool) {
	if n == 0 {
		n = 1
	}
	if n < 1 || n > len(s.voa.Channels) {
		s.pushError(-114, "Header suffix out of range")
		return nil, false
	}
	return s.voa.Channels[n-1], true
}

func sci(v float64) string { return fmt.Sprintf("%+.8E", v) }

// exec runs one command; ok is false when it raised an error.
func (s *KeysightServer) exec(header, arg string, query bool) (string, bool) {
	switch strings.ToUpper(header) {
	case "*IDN":
		return fmt.Sprintf("%s,%s,%s,%s", s.voa.Vendor, s.voa.Model, s.voa.Serial, s.voa.Firmware), true
	case "*CLS":
		s.mu.Lock()
		s.errq = nil
		s.mu.Unlock()
		return "", true
	case "*RST":
		for _, ch := range s.voa.Channels {
			ch.SetAttenuation(ch.MinDB)
			ch.SetOffset(0)
			ch.SetShutter(false) // the N776x powers up with its shutter closed
		}
		return "", true
	case "*OPC", "*WAI":
		s.waitSettled()
		if query {
			return "1", true
		}
		return "", true
	}
	ws, ok := parseHeader(header)
	if !ok {
		s.pushError(-113, "Undefined header")
		return "", false
	}
	n := ws[0].suffix
	switch {
	case matches(ws, mSYST, mERR), matches(ws, mSYST, mERR, mNEXT):
		if !query {
			break
		}
		return s.popError(), true
	case matches(ws, mINP, mATT):
		ch, ok := s.channel(n)
		if !ok {
			return "", false
		}
		if query {
			return sci(ch.Attenuation() + ch.Offset()), true
		}
		if f, hit := s.faults.TakeFailure(); hit {
			s.pushError(f.Code, f.Message)
			return "", false
		}
		v, ok := s.value(arg, "DB", ch.MinDB+ch.Offset(), ch.MaxDB+ch.Offset(), ch.MinDB+ch.Offset())
		if !ok {
			return "", false
		}
		phys := v - ch.Offset()
		if phys < ch.MinDB-1e-9 || phys > ch.MaxDB+1e-9 {
			s.pushError(-222, "Data out of range")
			return "", false
		}
		ch.SetAttenuation(phys)
		return "", true
	case matches(ws, mINP, mATT, mSPE):
		ch, ok := s.channel(n)
		if !ok {
			return "", false
		}
		if query {
			return sci(ch.Speed()), true
		}
		v, ok := s.value(arg, "", 0.1, 1000, 500)
		if !ok {
			return "", false
		}
		ch.SetSpeed(v)
		return "", true
	case matches(ws, mINP, mWAV):
		ch, ok := s.channel(n)
		if !ok {
			return "", false
		}
		if query {
			return sci(ch.Wavelength()), true
		}
		v, ok := s.wavelength(arg)
		if !ok {
			return "", false
		}
		ch.SetWavelength(v)
		return "", true
	case matches(ws, mINP, mOFFS):
		ch, ok := s.channel(n)
		if !ok {
			return "", false
		}
		if query {
			return sci(ch.Offset()), true
		}
		v, ok := s.value(arg, "DB", -200, 200, 0)
		if !ok {
			return "", false
		}
		ch.SetOffset(v)
		return "", true
	case matches(ws, mOUTP), matches(ws, mOUTP, mSTAT):
		ch, ok := s.channel(n)
		if !ok {
			return "", false
		}
		if query {
			if ch.Shutter() {
				return "1", true
			}
			return "0", true
		}
		switch strings.ToUpper(arg) {
		case "1", "ON":
			ch.SetShutter(true)
		case "0", "OFF":
			ch.SetShutter(false)
		default:
			s.pushError(-224, "Illegal parameter value")
			return "", false
		}
		return "", true
	case matches(ws, mSENS, mPOW, mUNIT):
		if _, ok := s.channel(n); !ok {
			return "", false
		}
		if query {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.unitW[n] {
				return "+1", true
			}
			return "+0", true
		}
		switch strings.ToUpper(arg) {
		case "0", "DBM":
			s.mu.Lock()
			s.unitW[n] = false
			s.mu.Unlock()
		case "1", "W", "WATT":
			s.mu.Lock()
			s.unitW[n] = true
			s.mu.Unlock()
		default:
			s.pushError(-224, "Illegal parameter value")
			return "", false
		}
		return "", true
	case matches(ws, mFETC, mPOW), matches(ws, mREAD, mPOW):
		ch, ok := s.channel(n)
		if !ok {
			return "", false
		}
		if !query {
			break
		}
		if ws[0].name == "READ" || ws[0].name == mREAD.long {
			s.waitSettled()
		}
		p := ch.OutputPowerDBm()
		// The monitor's floor: a dark or unlit channel reads noise.
		if math.IsInf(p, -1) || p < -80 {
			p = -80
		}
		s.mu.Lock()
		watts := s.unitW[n]
		s.mu.Unlock()
		if watts {
			return sci(math.Pow(10, p/10) / 1000), true
		}
		return sci(p), true
	}
	s.pushError(-113, "Undefined header")
	return "", false
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

// value parses a numeric argument with an optional unit suffix, or MIN, MAX, DEF.
func (s *KeysightServer) value(arg, unit string, lo, hi, def float64) (float64, bool) {
	a := strings.ToUpper(strings.TrimSpace(arg))
	switch a {
	case "MIN", "MINIMUM":
		return lo, true
	case "MAX", "MAXIMUM":
		return hi, true
	case "DEF", "DEFAULT":
		return def, true
	case "":
		s.pushError(-109, "Missing parameter")
		return 0, false
	}
	if unit != "" {
		a = strings.TrimSpace(strings.TrimSuffix(a, unit))
	}
	v, err := strconv.ParseFloat(a, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		s.pushError(-224, "Illegal parameter value")
		return 0, false
	}
	return v, true
}

func (s *KeysightServer) wavelength(arg string) (float64, bool) {
	a := strings.ToUpper(strings.TrimSpace(arg))
	scale := 1.0
	switch {
	case strings.HasSuffix(a, "NM"):
		a, scale = strings.TrimSuffix(a, "NM"), 1e-9
	case strings.HasSuffix(a, "M"):
		a = strings.TrimSuffix(a, "M")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(a), 64)
	if err != nil {
		s.pushError(-224, "Illegal parameter value")
		return 0, false
	}
	m := v * scale
	if m < 1200e-9 || m > 1700e-9 {
		s.pushError(-222, "Data out of range")
		return 0, false
	}
	return m, true
}
