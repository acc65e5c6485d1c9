package voa

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"time"
)

// OZOpticsServer emulates an OZ Optics DD-100-MC motor-driven attenuator on
// its RS-232 line (9600 8N1; here a pseudo-terminal). Commands end with CR.
// Every reply is one or more CRLF-terminated lines, then "Done", then an
// empty line, and comes only after the stepper has stopped: Done is the
// settle barrier. Implemented: A<dB> (two decimals; replies Pos:<steps>),
// A? (Atten:<dB>(dB)), D (DPos:<steps>, ATTEN:<dB>), S? (Pos:<steps>),
// S<n>, S+<n>, S-<n>, F and B (move the stepper; reply Pos:<steps>), RES?
// (the previous reply again), L<dB> (insertion loss), CD (model, firmware,
// MAX ATTEN, wavelength), H (home; Diff=<steps>), RST, E0/E1 (echo off/on). Errors: Error-2 bad command
// (A with more than the two decimals the device takes among them), Error-6
// value overflow; injected device errors as Error-<code>. A "drop" fault on
// a serial line means the device stops answering, like a stall. A slip
// fault makes a motion lose steps: the device counts, and reports, where
// it should stand, until H finds the count's error (Diff=<steps>).
type OZOpticsServer struct {
	voa    *world.VOA
	ch     *world.VOAChannel
	faults *wire.Faults

	// offset is how far the step count runs ahead of the stepper: the
	// steps its motions lost (faults.SlipNext) since it was last homed.
	// What the device reports is its count. Only the serving goroutine
	// touches it.
	offset int

	mu   sync.Mutex
	echo bool
	last []string // the previous reply's lines, for RES?
	p    *wire.PTY
	wg   sync.WaitGroup
	// done closes when the server closes: a motion under way ends its
	// wait (the device switched off mid-move).
	done chan struct{}
}

// stepsPerDB converts attenuation to the stepper position the device
// reports (its manual's example: A36.50 -> Pos:4060).
const stepsPerDB = 4060 / 36.50

// NewOZOpticsServer serves the single channel of v; faults may be nil.
func NewOZOpticsServer(v *world.VOA, faults *wire.Faults) *OZOpticsServer {
	if faults == nil {
		faults = &wire.Faults{}
	}
	faults.HasStepper() // a slip fault is this device's
	return &OZOpticsServer{voa: v, ch: v.Channels[0], faults: faults, done: make(chan struct{})}
}

// settle waits until the stepper has stopped, as the device does before
// it answers a motion; or until the server closes.
func (s *OZOpticsServer) settle() { s.wait(s.ch.SettleTime()) }

// Start creates the pseudo-terminal and serves it.
func (s *OZOpticsServer) Start() error {
	p, err := wire.OpenPTY()
	if err != nil {
		return err
	}
	s.p = p
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.serve()
	}()
	return nil
}

// Path is the serial device a driver opens (/dev/pts/N).
func (s *OZOpticsServer) Path() string { return s.p.Path }

// Address is the inventory address: serial:///dev/pts/N?baud=9600.
func (s *OZOpticsServer) Address() string { return "serial://" + s.p.Path + "?baud=9600" }

// Close stops serving and releases the pseudo-terminal.
func (s *OZOpticsServer) Close() error {
	if s.p == nil {
		return nil
	}
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	err := s.p.Close()
	s.wg.Wait()
	return err
}

func (s *OZOpticsServer) serve() {
	buf := make([]byte, 256)
	var line bytes.Buffer
	for {
		n, err := s.p.Master.Read(buf)
		if err != nil {
			return
		}
		for _, b := range buf[:n] {
			switch b {
			case '\r', '\n':
				if line.Len() > 0 {
					s.handle(line.String())
					line.Reset()
				}
			default:
				line.WriteByte(b)
			}
		}
	}
}

func (s *OZOpticsServer) reply(lines ...string) {
	s.mu.Lock()
	s.last = append([]string(nil), lines...)
	s.mu.Unlock()
	if s.faults.TakeGarble() {
		lines = []string{"\x7f@#?!\x01garble"}
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("Done\r\n\r\n")
	if !s.wait(s.faults.Delay()) {
		return // closed during an injected delay: the reply is never sent
	}
	s.p.Master.Write([]byte(b.String()))
}

// wait holds the device for d (a motion's settling, an injected reply
// delay), or until the server closes (a device switched off mid-move or
// while slow to answer); it reports whether d ran its course.
func (s *OZOpticsServer) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}

// handle answers one command line: the echo when it is on, then the
// command's lines.
func (s *OZOpticsServer) handle(cmd string) {
	cmd = strings.TrimSpace(cmd)
	if s.faults.TakeDrop() || s.faults.TakeStall() {
		return
	}
	s.mu.Lock()
	echo := s.echo
	s.mu.Unlock()
	var pre []string
	if echo {
		pre = append(pre, cmd)
	}
	s.reply(append(pre, s.dispatch(cmd)...)...)
}

// ozCommand answers a command (as sent, and in upper case) with its
// reply's lines.
type ozCommand func(s *OZOpticsServer, cmd, up string) []string

// ozExact are the commands that are one word; ozPrefixed, tried in turn
// after them, those that take an argument after their letter.
var (
	ozExact = map[string]ozCommand{
		"E0":   (*OZOpticsServer).setEcho,
		"E1":   (*OZOpticsServer).setEcho,
		"A?":   (*OZOpticsServer).attenuation,
		"D":    (*OZOpticsServer).position,
		"S?":   (*OZOpticsServer).stepPosition,
		"F":    (*OZOpticsServer).step,
		"B":    (*OZOpticsServer).step,
		"RES?": (*OZOpticsServer).repeat,
		"CD":   (*OZOpticsServer).describe,
		"H":    (*OZOpticsServer).home,
		"RST":  func(*OZOpticsServer, string, string) []string { return nil },
	}
	ozPrefixed = []struct {
		prefix string
		cmd    ozCommand
	}{
		{"S", (*OZOpticsServer).step},
		{"L", (*OZOpticsServer).insertionLoss},
		{"A", (*OZOpticsServer).setAttenuation},
	}
)

// dispatch finds the command's handler: Error-2 for a command the device
// does not have.
func (s *OZOpticsServer) dispatch(cmd string) []string {
	up := strings.ToUpper(cmd)
	if h, ok := ozExact[up]; ok {
		return h(s, cmd, up)
	}
	for _, p := range ozPrefixed {
		if strings.HasPrefix(up, p.prefix) {
			return p.cmd(s, cmd, up)
		}
	}
	return []string{"Error-2"}
}

// setEcho turns the echo of commands off (E0) or on (E1).
func (s *OZOpticsServer) setEcho(_, up string) []string {
	s.mu.Lock()
	s.echo = up == "E1"
	s.mu.Unlock()
	return nil
}

func (s *OZOpticsServer) attenuation(string, string) []string {
	return []string{fmt.Sprintf("Atten:%.2f(dB)", s.reported())}
}

// position answers the step position, then the attenuation (QMI's
// OzOptics_DD100MC driver reads "DPos:<steps>" and "ATTEN:<dB>").
func (s *OZOpticsServer) position(string, string) []string {
	return []string{fmt.Sprintf("DPos:%d", s.count()), fmt.Sprintf("ATTEN:%.2f", s.reported())}
}

func (s *OZOpticsServer) stepPosition(string, string) []string {
	return []string{fmt.Sprintf("Pos:%d", s.count())}
}

// step moves the stepper: F and B step once forward and back; S<n> goes
// to n steps from home, S+<n> and S-<n> move by n; each answers the
// final position (COO-Utilities/ozoptics dd100mc.py command list).
func (s *OZOpticsServer) step(cmd, up string) []string {
	to, ok := s.count(), true
	switch {
	case up == "F":
		to++
	case up == "B":
		to--
	case strings.HasPrefix(up, "S+"), strings.HasPrefix(up, "S-"):
		n, err := strconv.Atoi(strings.TrimSpace(cmd[2:]))
		ok = err == nil && n >= 0
		if up[1] == '-' {
			n = -n
		}
		to += n
	default:
		n, err := strconv.Atoi(strings.TrimSpace(cmd[1:]))
		ok = err == nil
		to = n
	}
	if !ok {
		return []string{"Error-2"}
	}
	if f, hit := s.faults.TakeFailure(); hit {
		return []string{fmt.Sprintf("Error-%d", f.Code)}
	}
	if to < int(math.Round(s.ch.MinDB*stepsPerDB)) || to > int(math.Round(s.ch.MaxDB*stepsPerDB)) {
		return []string{"Error-6"}
	}
	s.moveTo(float64(to) / stepsPerDB)
	s.settle()
	return []string{fmt.Sprintf("Pos:%d", s.count())}
}

// repeat answers the previous command's response, again.
func (s *OZOpticsServer) repeat(string, string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// insertionLoss takes L<dB>, the insertion loss, within the device's
// range.
func (s *OZOpticsServer) insertionLoss(cmd, _ string) []string {
	v, err := strconv.ParseFloat(strings.TrimSpace(cmd[1:]), 64)
	if err != nil || v < 0 || v > s.ch.MaxDB {
		return []string{"Error-2"}
	}
	return nil
}

// setAttenuation takes A<dB> and answers the stepper's position once it
// has stopped there.
func (s *OZOpticsServer) setAttenuation(cmd, _ string) []string {
	if f, hit := s.faults.TakeFailure(); hit {
		return []string{fmt.Sprintf("Error-%d", f.Code)}
	}
	arg := strings.TrimSpace(cmd[1:])
	v, err := strconv.ParseFloat(arg, 64)
	// "Two digits to the right of the decimal point are allowed, but
	// not required" (the device's command list, as COO-Utilities/
	// ozoptics dd100mc.py quotes it): A1.234 is a bad command.
	_, frac, dot := strings.Cut(arg, ".")
	if err != nil || math.IsNaN(v) || strings.ContainsAny(arg, "eE") || (dot && len(frac) > 2) {
		return []string{"Error-2"}
	}
	if v < s.ch.MinDB || v > s.ch.MaxDB {
		return []string{"Error-6"}
	}
	s.moveTo(math.Round(v*100) / 100)
	s.settle()
	return []string{fmt.Sprintf("Pos:%d", int(math.Round(s.reported()*stepsPerDB)))}
}

// describe answers CD: model, firmware, serial, maximum attenuation and
// wavelength.
func (s *OZOpticsServer) describe(string, string) []string {
	return []string{s.voa.Model, "Firmware Ver:" + s.voa.Firmware, "S/N:" + s.voa.Serial,
		fmt.Sprintf("MAX ATTEN:%.2f", s.ch.MaxDB), fmt.Sprintf("Wavelength:%.0f", s.ch.Wavelength()*1e9)}
}

// home runs the stepper back to the home sensor and reports how far its
// step count was off there (COO-Utilities/ozoptics dd100mc.py's home()
// waits for "Diff=<n>", then takes the position as 0): the steps its
// motions lost since it was last homed (none unless a fault made it
// slip), which the count forgets there.
func (s *OZOpticsServer) home(string, string) []string {
	if f, hit := s.faults.TakeFailure(); hit {
		return []string{fmt.Sprintf("Error-%d", f.Code)} // Error-5: the home sensor
	}
	s.ch.SetAttenuation(s.ch.MinDB)
	s.settle()
	diff := s.count() - int(math.Round(s.ch.MinDB*stepsPerDB))
	s.offset = 0
	return []string{fmt.Sprintf("Diff=%d", diff)}
}

// count is the step position the device counts, and reports: the
// stepper's, ahead by the steps its motions lost.
func (s *OZOpticsServer) count() int { return s.steps() + s.offset }

// reported is the attenuation the device reports, its count's.
func (s *OZOpticsServer) reported() float64 {
	return s.ch.Attenuation() + float64(s.offset)/stepsPerDB
}

// moveTo runs the stepper to where the count reads dB. A pending slip
// (faults.SlipNext) loses steps on the way: the stepper stops that many
// short, within its range, and the count is off by them from then on.
func (s *OZOpticsServer) moveTo(dB float64) {
	target := dB - float64(s.offset)/stepsPerDB
	n := s.faults.TakeSlip()
	if n == 0 {
		s.ch.SetAttenuation(target)
		return
	}
	lost := float64(n) / stepsPerDB
	if target < s.ch.Attenuation() {
		lost = -lost // short of a move down is above it
	}
	stop := min(max(target-lost, s.ch.MinDB), s.ch.MaxDB)
	s.ch.SetAttenuation(stop) // the channel moves there at its speed
	s.offset = int(math.Round(dB*stepsPerDB)) - int(math.Round(stop*stepsPerDB))
}

// steps is the stepper position the attenuation corresponds to.
func (s *OZOpticsServer) steps() int { return int(math.Round(s.ch.Attenuation() * stepsPerDB)) }
