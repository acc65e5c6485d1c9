package voa

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"testbed/transport"
)

// OZOptics drives an OZ Optics DD-100-MC over RS-232 (9600 8N1, commands
// end with CR). A reply is lines, then "Done", then an empty line, and only
// comes once the motor has stopped, so "Done" is the settle barrier; the
// driver still reads the value back with A?.
//
// Stale replies: before each command, lines left over are discarded; after
// a timeout or an unparsable reply the port is closed and reopened on the
// next call, so a late reply is never taken for the next one. A read, or a
// setting (absolute, confirmed by A?), whose reply is garbled is tried once
// more on the reopened port.
type OZOptics struct {
	addr string
	opts Options

	mu    sync.Mutex
	line  *transport.Line
	id    transport.Identity
	maxDB float64
	last  float64
}

// errorMeanings are the DD-100's error codes.
var errorMeanings = map[string]string{"2": "bad command", "5": "home sensor", "6": "value overflow", "7": "motor voltage"}

// OpenOZOptics opens the serial port, turns echo off and reads CD.
func OpenOZOptics(ctx context.Context, address string, opts Options) (*OZOptics, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	o := &OZOptics{addr: address, opts: opts}
	o.line = transport.NewLine(address, transport.LineOptions{
		DialOptions: transport.DialOptions{EOL: "\r", Transcript: opts.Transcript},
		Hello:       o.hello,
		DialError:   func(err error) error { return o.errorf("open: %v", err) },
		Retryable:   func(err error) bool { return errors.Is(err, errGarbled) },
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.line.Connect(ctx); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *OZOptics) errorf(format string, args ...any) error {
	return fmt.Errorf("ozoptics-dd100 %s: %s", o.addr, fmt.Sprintf(format, args...))
}

// hello greets a newly opened port: echo off, then CD for the identity
// and the range.
func (o *OZOptics) hello(ctx context.Context) error {
	if lines, err := o.command(ctx, "E0", o.opts.Timeout); err != nil {
		return err
	} else if len(lines) > 0 {
		o.drop()
		return fmt.Errorf("%w: %w", o.errorf("E0 reply %q, expected Done alone", strings.Join(lines, " | ")), errGarbled)
	}
	lines, err := o.command(ctx, "CD", o.opts.Timeout)
	if err != nil {
		return err
	}
	o.id = transport.Identity{Vendor: "OZ Optics"}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, ":")
		switch {
		case strings.HasPrefix(strings.ToUpper(l), "DD-"):
			o.id.Model = strings.TrimSpace(l)
		case strings.Contains(strings.ToUpper(k), "VER"):
			o.id.Firmware = strings.TrimSpace(v)
		case strings.HasPrefix(strings.ToUpper(k), "S/N"):
			o.id.Serial = strings.TrimSpace(v)
		case strings.ToUpper(k) == "MAX ATTEN":
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				o.maxDB = f
			}
		}
	}
	if o.id.Model == "" || o.maxDB <= 0 {
		o.drop()
		return o.errorf("CD reply %q does not name the model and MAX ATTEN", strings.Join(lines, " | "))
	}
	return nil
}

// drop closes a port that is out of step.
func (o *OZOptics) drop() { o.line.Drop() }

// command sends cmd and returns the reply lines before "Done".
func (o *OZOptics) command(ctx context.Context, cmd string, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn := o.line.Conn()
	conn.Drain()
	if err := conn.Send(ctx, cmd); err != nil {
		o.drop()
		return nil, fmt.Errorf("ozoptics-dd100 %s: send %q: %w", o.addr, cmd, err)
	}
	var lines []string
	for {
		l, err := conn.ReadLine(ctx)
		if err != nil {
			o.drop()
			return nil, fmt.Errorf("ozoptics-dd100 %s: %s: %w", o.addr, cmd, err)
		}
		l = strings.TrimSpace(l)
		switch {
		case l == "" || l == cmd:
			continue // the blank line after Done, or an echo
		case l == "Done":
			for _, x := range lines {
				if code, ok := strings.CutPrefix(x, "Error-"); ok {
					return nil, o.errorf("%s: device error %s (%s)", cmd, code, errorMeanings[code])
				}
			}
			return lines, nil
		}
		lines = append(lines, l)
	}
}

// Identity implements Attenuator.
func (o *OZOptics) Identity(ctx context.Context) (transport.Identity, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.id, nil
}

// Channels implements Attenuator: the DD-100-MC has one.
func (o *OZOptics) Channels() int { return 1 }

// Capabilities implements Attenuator: attenuation only.
func (o *OZOptics) Capabilities() []string { return nil }

// SetAttenuation implements Attenuator.
func (o *OZOptics) SetAttenuation(ctx context.Context, ch int, dB float64) error {
	if ch != 1 {
		return o.errorf("channel %d does not exist (the DD-100-MC has 1)", ch)
	}
	lim := Limits{MinDB: 0, MaxDB: o.maxDB}
	if o.opts.Limits != nil {
		lim = *o.opts.Limits
	}
	if err := lim.Check(ch, dB); err != nil {
		return o.errorf("refused before sending: %v", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// Tried once more on the reopened port if a reply was garbled or the
	// port was lost; a timeout is not retried (the motor may still be
	// moving).
	return o.line.Retry(ctx, func() error { return o.set(ctx, dB) })
}

func (o *OZOptics) set(ctx context.Context, dB float64) error {
	doing := fmt.Sprintf("set to %.2f dB", dB)
	// The reply waits for the motor: allow the move at a slow 5 dB/s.
	move := time.Duration(math.Abs(dB-o.last)/5*float64(time.Second)) + o.opts.Timeout
	lines, err := o.command(ctx, fmt.Sprintf("A%.2f", dB), move)
	if err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Pos:") {
		o.drop()
		return fmt.Errorf("%w: %w", o.errorf("%s: reply %q, expected Pos:<steps>", doing, strings.Join(lines, " | ")), errGarbled)
	}
	got, err := o.read(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	if math.Abs(got-dB) > settleTolerance {
		return o.errorf("%s: reads back %.2f dB after Done", doing, got)
	}
	o.last = got
	return nil
}

func (o *OZOptics) read(ctx context.Context) (float64, error) {
	lines, err := o.command(ctx, "A?", o.opts.Timeout)
	if err != nil {
		return 0, err
	}
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "Atten:"); ok {
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, "(dB)"), 64)
			if err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f, nil
			}
		}
	}
	o.drop()
	return 0, fmt.Errorf("%w: %w", o.errorf("A? reply %q, expected Atten:<dB>(dB)", strings.Join(lines, " | ")), errGarbled)
}

// Attenuation implements Attenuator.
func (o *OZOptics) Attenuation(ctx context.Context, ch int) (float64, error) {
	if ch != 1 {
		return 0, o.errorf("channel %d does not exist (the DD-100-MC has 1)", ch)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var v float64
	err := o.line.Retry(ctx, func() (err error) {
		v, err = o.read(ctx)
		return err
	})
	if err == nil {
		o.last = v
	}
	return v, err
}

// Close implements Attenuator.
func (o *OZOptics) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.line.Close()
}

func init() {
	register("ozoptics-dd100", func(ctx context.Context, address string, opts Options) (Attenuator, error) {
		return OpenOZOptics(ctx, address, opts)
	})
}
