package voa

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testbed/drivers"
	"time"

	"testbed/transport"
)

// OZOptics drives an OZ Optics DD-100-MC over RS-232 (9600 8N1, commands
// end with CR). A reply is lines, then "Done", then an empty line, and only
// comes once the motor has stopped, so "Done" is the settle barrier; the
// driver still reads the value back with A?.
//
// Waits on the motor: the DD-100 reports no speed, so a move is given its
// share of the time its manual allows for homing (H, "allow 30 s"), a run
// over the whole range (MAX ATTEN, from CD) back to the home sensor, or of
// Options.TravelTime: the move's size over the range, times the travel
// time, and four round trips (the longest measured on the port) and the
// Timeout. A homing is given the whole travel time, as the stepper may
// have lost its count. Past it the call fails naming the port and the
// bound. SetAttenuationBound gives a run's undo that long.
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
	// last is where the attenuator was read back at last (known: since
	// the port was opened); rtt the longest round trip of an exchange
	// that does not move the motor.
	last  float64
	known bool
	rtt   time.Duration
}

var _ Homer = (*OZOptics)(nil)

// dd100TravelTime is how long the DD-100-MC's stepper may take over its
// whole range: the time its manual allows for homing ("H homes (allow
// 30 s)"), a run from anywhere in the range back to the home sensor at
// its low end (the device's command list, as COO-Utilities/ozoptics'
// dd100mc.py quotes it: H "re-homes the unit"; that driver reads with a
// 30 s socket timeout).
const dd100TravelTime = 30 * time.Second

// errorMeanings are the DD-100's error codes.
var errorMeanings = map[string]string{"2": "bad command", "5": "home sensor", "6": "value overflow", "7": "motor voltage"}

// OpenOZOptics opens the serial port, turns echo off and reads CD.
func OpenOZOptics(ctx context.Context, address string, opts Options) (*OZOptics, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.TravelTime <= 0 {
		opts.TravelTime = dd100TravelTime
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
// and the range. The attenuator may have been moved by hand since the
// port was last open: where it stands is not known until read.
func (o *OZOptics) hello(ctx context.Context) error {
	o.known, o.rtt = false, 0
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

// drop closes a port that is out of step; where the attenuator stands
// is read again on the next.
func (o *OZOptics) drop() {
	o.known = false
	o.line.Drop()
}

// command sends cmd and returns the reply lines before "Done", within
// timeout; a command that does not move the motor is a round trip, and
// the longest is kept.
func (o *OZOptics) command(ctx context.Context, cmd string, timeout time.Duration) ([]string, error) {
	t0 := time.Now()
	lines, err := o.exchange(ctx, cmd, timeout)
	if err == nil {
		o.rtt = max(o.rtt, time.Since(t0))
	}
	return lines, err
}

// motion sends a command that moves the motor, within limit (why: what
// the limit came from), and returns its reply lines before "Done"; past
// the limit it fails naming it.
func (o *OZOptics) motion(ctx context.Context, cmd string, limit time.Duration, why string) ([]string, error) {
	o.opts.Transcript.Note("Done wait up to %v: %s", limit, why)
	start := time.Now()
	lines, err := o.exchange(ctx, cmd, limit)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && time.Since(start) >= limit {
		return nil, fmt.Errorf("%w: %w", o.errorf("%s: no Done within %v (%s)", cmd, limit, why), context.DeadlineExceeded)
	}
	return lines, err
}

func (o *OZOptics) exchange(ctx context.Context, cmd string, timeout time.Duration) ([]string, error) {
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
	// The reply waits for the motor: the move's share of the travel time.
	limit, why := o.moveLimit(dB)
	o.known = false // until read back
	lines, err := o.motion(ctx, fmt.Sprintf("A%.2f", dB), limit, why)
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
	o.last, o.known = got, true
	if math.Abs(got-dB) > settleTolerance {
		return o.errorf("%s: reads back %.2f dB after Done", doing, got)
	}
	return nil
}

// moveLimit is how long the reply to a move to dB may take: the move's
// share of the travel time over the range (from where the attenuator was
// read back, or, not known, from the far end of the range), four round
// trips and the Timeout; and what it came from.
func (o *OZOptics) moveLimit(dB float64) (time.Duration, string) {
	from, move := fmt.Sprintf("%.2f dB", o.last), math.Abs(dB-o.last)
	if !o.known {
		from, move = "where it may stand (not read yet)", max(dB, o.maxDB-dB)
	}
	travel := time.Duration(min(1, move/o.maxDB) * float64(o.opts.TravelTime))
	return travel + 4*o.rtt + o.opts.Timeout, fmt.Sprintf("%.2f dB from %s, of %.2f dB in %v, round trip %v", move, from, o.maxDB, o.opts.TravelTime, o.rtt)
}

// homeLimit is how long homing may take: the whole travel time (the
// stepper's count may be off by any amount), four round trips and the
// Timeout.
func (o *OZOptics) homeLimit() (time.Duration, string) {
	return o.opts.TravelTime + 4*o.rtt + o.opts.Timeout, fmt.Sprintf("the whole %.2f dB in %v, round trip %v", o.maxDB, o.opts.TravelTime, o.rtt)
}

// Home runs the stepper back to its home sensor (H), which resets its
// step count (the device answers Diff=<steps>, how far the count was off
// there), and reads where it then stands. It leaves the attenuator at the
// home position, its minimum: the caller sets it after. A stepper that
// has lost steps, or an Error-5 (home sensor), is what homing is for.
// Homing is refused before anything is sent when Options.Limits keep the
// attenuation above the home position (0 dB): the light would pass
// unattenuated to what the limit protects.
func (o *OZOptics) Home(ctx context.Context) (diff int, err error) {
	if o.opts.Limits != nil && o.opts.Limits.MinDB > 0 {
		return 0, o.errorf("home: refused before sending: homing runs the attenuator to its minimum, 0 dB, below its limit of %.2f dB", o.opts.Limits.MinDB)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// Homing again is harmless: a garbled reply or a lost port is tried
	// once more on the reopened port, as a setting is; a timeout is not
	// (the motor may still be running).
	err = o.line.Retry(ctx, func() error {
		limit, why := o.homeLimit()
		o.known = false
		lines, err := o.motion(ctx, "H", limit, why)
		if err != nil {
			return fmt.Errorf("home: %w", err)
		}
		for _, l := range lines {
			if v, ok := strings.CutPrefix(l, "Diff="); ok {
				if diff, err = strconv.Atoi(strings.TrimSpace(v)); err == nil {
					break
				}
			}
		}
		if err != nil || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Diff=") }) {
			o.drop()
			return fmt.Errorf("%w: %w", o.errorf("home: reply %q, expected Diff=<steps>", strings.Join(lines, " | ")), errGarbled)
		}
		got, err := o.read(ctx)
		if err != nil {
			return fmt.Errorf("home: %w", err)
		}
		o.last, o.known = got, true
		return nil
	})
	return diff, err
}

// SetAttenuationBound is how long SetAttenuation(ch, dB) may take as the
// driver knows the attenuator now: the move's limit (moveLimit) and the
// read-back's Timeout, twice over for the one try on a reopened port. A
// run's undo of a setting is given this long.
func (o *OZOptics) SetAttenuationBound(ctx context.Context, ch int, dB float64) (time.Duration, error) {
	if ch != 1 {
		return 0, o.errorf("channel %d does not exist (the DD-100-MC has 1)", ch)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	limit, _ := o.moveLimit(dB)
	return 2 * (limit + o.opts.Timeout), nil
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
		o.last, o.known = v, true
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
	}, map[string]drivers.Option{"travel_time": travelTimeOption})
}
