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

// settleTolerance is how close a read-back must be to the set point.
const settleTolerance = 0.05

// Keysight drives a Keysight N776xA attenuator (N7761A, N7762A, N7764A,
// N7766A, N7768A) over SCPI on TCP (port 5025), following the Keysight
// N77xx Series Programming Guide (N7744-90C, edition 7, March 2015).
//
// Channels are the inventory's 1..N; the instrument numbers slots, each
// attenuator taking two ("Slot and Channel Numbers": the N7764A's four
// attenuators are slots 1-2, 3-4, 5-6 and 7-8), so channel c is sent as
// slot 2c-1 (:INP1, :INP3, :INP5, :INP7).
//
// A setting is :INP<slot>:ATT <v>dB; then *OPC? is polled (it answers 0
// while the filter moves and 1 once it has stopped, "Common Status Command
// Summary"), the error queue is read (:SYST:ERR? until +0), and
// :INP<slot>:ATT? is read back until it is within 0.05 dB. Every setting
// reads the error queue.
//
// Stale replies: after a timeout or an unparsable reply the connection is
// considered out of step and is closed; the next call dials again, so a
// late answer to an old query is never taken for a new one. Reads, and
// settings (which are absolute and confirmed by read-back), are tried once
// more on a new connection when the connection dropped or a reply was
// garbled; a timeout is not retried.
type Keysight struct {
	addr string
	opts Options

	mu       sync.Mutex
	line     *transport.Line
	id       transport.Identity
	channels int
	// motion is each channel's speed and range as the instrument reported
	// them on this connection (asked once, forgotten on a new connection
	// and when the driver sets the speed); rtt is the longest round trip
	// measured on it.
	motion map[int]channelMotion
	rtt    time.Duration
	// stands is where each channel's filter was read back at last on this
	// connection (a setting's read-back, or Attenuation): the next move's
	// size is from there, not asked again. Forgotten on a new connection
	// and while a setting is under way.
	stands map[int]float64
}

// channelMotion is how a channel's filter moves, as the instrument says:
// its speed (:INP:ATT:SPE?, dB/s) and the span of its range (:INP:ATT?
// MAX minus MIN, dB).
type channelMotion struct {
	speed, span float64
}

// keysightSpeedRange is the range of :INPut:ATTenuation:SPEed, dB/s
// (N7744-90C, "The INPut subtree": 0.1 to 1000 dB/s): at the lower end a
// 40 dB move takes 400 s.
var keysightSpeedRange = [2]float64{0.1, 1000}

// keysightModels is the number of attenuators of each model (N7744-90C,
// "Slot and Channel Numbers"; the N7766A/N7768A are the multimode
// versions of the N7762A/N7764A).
var keysightModels = []struct {
	prefix string
	n      int
}{{"N7761", 1}, {"N7762", 2}, {"N7764", 4}, {"N7766", 2}, {"N7768", 4}}

// KeysightModels lists the models the driver supports.
func KeysightModels() []string {
	var out []string
	for _, m := range keysightModels {
		out = append(out, m.prefix+"A")
	}
	return out
}

// slot is the instrument's slot number of channel ch.
func slot(ch int) int { return 2*ch - 1 }

// errGarbled marks a reply the protocol does not allow.
var errGarbled = errors.New("garbled reply")

// OpenKeysight connects, clears status, reads the identity and empties the
// error queue.
func OpenKeysight(ctx context.Context, address string, opts Options) (*Keysight, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	k := &Keysight{addr: address, opts: opts, motion: map[int]channelMotion{}, stands: map[int]float64{}}
	k.line = transport.NewLine(address, transport.LineOptions{
		DialOptions: transport.DialOptions{EOL: "\n", Transcript: opts.Transcript},
		DialTimeout: opts.Timeout,
		Hello:       k.hello,
		DialError:   func(err error) error { return k.errorf("connect: %v", err) },
		Retryable:   func(err error) bool { return errors.Is(err, errGarbled) },
	})
	k.mu.Lock()
	defer k.mu.Unlock()
	// The identity read is idempotent: one garbled reply or dropped
	// connection while opening is tried once more, as any read is.
	if err := k.line.Retry(ctx, func() error { return nil }); err != nil {
		k.drop()
		return nil, err
	}
	return k, nil
}

func (k *Keysight) errorf(format string, args ...any) error {
	return fmt.Errorf("keysight-n77xx %s: %w", k.addr, fmt.Errorf(format, args...))
}

// hello greets a new connection: clears status, reads the identity and
// the number of attenuators, sets the monitors' unit, and empties the
// error queue.
func (k *Keysight) hello(ctx context.Context) error {
	ctx, cancel := k.deadline(ctx)
	defer cancel()
	// A new connection may meet an instrument reset or set by hand since:
	// its speeds, and where its filters stand, are asked again.
	k.motion, k.stands, k.rtt = map[int]channelMotion{}, map[int]float64{}, 0
	if err := k.send(ctx, "*CLS"); err != nil {
		return err
	}
	idn, err := k.query(ctx, "*IDN?")
	if err != nil {
		return err
	}
	parts := strings.Split(idn, ",")
	if len(parts) != 4 {
		k.drop()
		return k.errorf("*IDN? reply %q is not vendor,model,serial,firmware: %w", idn, errGarbled)
	}
	k.id = transport.Identity{Vendor: strings.TrimSpace(parts[0]), Model: strings.TrimSpace(parts[1]), Serial: strings.TrimSpace(parts[2]), Firmware: strings.TrimSpace(parts[3])}
	k.channels = 0
	for _, m := range keysightModels {
		if strings.HasPrefix(k.id.Model, m.prefix) {
			k.channels = m.n
		}
	}
	if k.channels == 0 {
		k.drop()
		return k.errorf("model %q is not one of %s", k.id.Model, strings.Join(KeysightModels(), ", "))
	}
	// The built-in monitor reports dBm: :OUTPut<n>:POWer:UNit DBM(0)
	// (N7744-90C, The OUTput subtree; :SENSe is the power meters' form).
	for ch := 1; ch <= k.channels; ch++ {
		if err := k.send(ctx, fmt.Sprintf(":OUTP%d:POW:UNIT 0", slot(ch))); err != nil {
			return err
		}
	}
	if err := k.checkErrors(ctx, "after connect"); err != nil {
		return err
	}
	return nil
}

func (k *Keysight) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < k.opts.Timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, k.opts.Timeout)
}

// drop closes a connection that is out of step.
func (k *Keysight) drop() { k.line.Drop() }

func (k *Keysight) send(ctx context.Context, cmd string) error {
	if err := k.line.Conn().Send(ctx, cmd); err != nil {
		k.drop()
		return fmt.Errorf("keysight-n77xx %s: send %q: %w", k.addr, cmd, err)
	}
	return nil
}

func (k *Keysight) query(ctx context.Context, q string) (string, error) {
	ctx, cancel := k.deadline(ctx)
	defer cancel()
	t0 := time.Now()
	if err := k.send(ctx, q); err != nil {
		return "", err
	}
	line, err := k.line.Conn().ReadLine(ctx)
	if err != nil {
		k.drop()
		return "", fmt.Errorf("keysight-n77xx %s: %s: %w", k.addr, q, err)
	}
	k.rtt = max(k.rtt, time.Since(t0))
	return strings.TrimSpace(line), nil
}

// scpiInfinity is SCPI's representation of infinity (9.91E37, above it,
// is its not-a-number).
const scpiInfinity = 9.9e37

func (k *Keysight) queryFloat(ctx context.Context, q string) (float64, error) {
	s, err := k.query(ctx, q)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	// SCPI writes infinity as 9.9E37 and not-a-number as 9.91E37 (SCPI-99
	// vol. 1, 7.2.1.5): a reading is neither.
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= scpiInfinity {
		k.drop()
		return 0, k.errorf("%s: reply %q is not a finite number: %w", q, s, errGarbled)
	}
	return v, nil
}

// checkErrors drains SYST:ERR? and returns the first device error.
func (k *Keysight) checkErrors(ctx context.Context, doing string) error {
	var first error
	for i := 0; i < 32; i++ {
		s, err := k.query(ctx, ":SYST:ERR?")
		if err != nil {
			return err
		}
		code, text, ok := parseSCPIError(s)
		if !ok {
			k.drop()
			return k.errorf("SYST:ERR? reply %q is not <code>,\"<text>\": %w", s, errGarbled)
		}
		if code == 0 {
			return first
		}
		if first == nil {
			first = k.errorf("%s: device error %d,%q", doing, code, text)
		}
	}
	return k.errorf("%s: error queue does not empty", doing)
}

func parseSCPIError(s string) (int, string, bool) {
	c, t, ok := strings.Cut(s, ",")
	if !ok {
		return 0, "", false
	}
	code, err := strconv.Atoi(strings.TrimSpace(c))
	if err != nil {
		return 0, "", false
	}
	return code, strings.Trim(strings.TrimSpace(t), `"`), true
}

func (k *Keysight) checkChannel(ch int) error {
	if ch < 1 || ch > k.channels {
		return k.errorf("channel %d does not exist (the %s has %d)", ch, k.id.Model, k.channels)
	}
	return nil
}

// Identity implements Attenuator.
func (k *Keysight) Identity(ctx context.Context) (transport.Identity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.id, nil
}

// Channels implements Attenuator.
func (k *Keysight) Channels() int { return k.channels }

// Capabilities implements Attenuator.
func (k *Keysight) Capabilities() []string {
	return []string{CapPowerMeter, CapShutter, CapWavelength}
}

// SetAttenuation implements Attenuator: limits first, then set, *OPC?, the
// error queue, and read-backs until settled. A setting is absolute, so
// after a dropped connection it is sent again once on a new one.
func (k *Keysight) SetAttenuation(ctx context.Context, ch int, dB float64) error {
	if err := k.checkChannel(ch); err != nil {
		return err
	}
	if k.opts.Limits != nil {
		if err := k.opts.Limits.Check(ch, dB); err != nil {
			return k.errorf("refused before sending: %v", err)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.line.Retry(ctx, func() error { return k.set(ctx, ch, dB) })
}

func (k *Keysight) set(ctx context.Context, ch int, dB float64) error {
	doing := fmt.Sprintf("set channel %d to %.2f dB", ch, dB)
	limit, why, err := k.moveLimit(ctx, ch, dB)
	if err != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	k.opts.Transcript.Note("*OPC? wait up to %v: %s", limit, why)
	// Until the read-back below, where the filter stands is not known.
	delete(k.stands, ch)
	if err := k.send(ctx, fmt.Sprintf(":INP%d:ATT %.3fdB", slot(ch), dB)); err != nil {
		return err
	}
	// *OPC? answers 0 while the filter moves and 1 once it has stopped
	// (N7744-90C: "*OPC? returns 1 if operation complete, 0 otherwise"):
	// poll it for as long as the move takes at the channel's speed.
	if err := k.waitOPC(ctx, doing, limit); err != nil {
		return err
	}
	if err := k.checkErrors(ctx, doing); err != nil {
		return err
	}
	// Wait by asking: the read-back must agree with the set point.
	wctx, wcancel := k.deadline(ctx)
	defer wcancel()
	var got float64
	err = transport.Poll(wctx, func() (bool, error) {
		var err error
		if got, err = k.queryFloat(wctx, fmt.Sprintf(":INP%d:ATT?", slot(ch))); err != nil {
			return false, fmt.Errorf("%s: %w", doing, err)
		}
		return math.Abs(got-dB) <= settleTolerance, nil
	})
	if err != nil && err == wctx.Err() {
		return k.errorf("%s: reads back %.3f dB, not settled within %.2f dB", doing, got, settleTolerance)
	}
	if err == nil {
		k.stands[ch] = got
	}
	return err
}

// channelMotion is channel ch's speed and range, asked of the instrument
// the first time on a connection. The range comes from the attenuation
// query's MIN and MAX forms, as Keysight's attenuator SCPI gives them
// (8163A/B, 8164A/B & 8166A/B Mainframes Programming Guide, "Signal
// Conditioning": ":INPut[n][:CHANnel[m]]:ATTenuation? MIN | DEF | MAX
// returns the minimum, default, or maximum value of the attenuation
// factor possible"; the N77xx attenuators keep that command set).
func (k *Keysight) channelMotion(ctx context.Context, ch int) (channelMotion, error) {
	if m, ok := k.motion[ch]; ok {
		return m, nil
	}
	q := fmt.Sprintf(":INP%d:ATT:SPE?", slot(ch))
	speed, err := k.queryFloat(ctx, q)
	if err != nil {
		return channelMotion{}, err
	}
	if speed <= 0 {
		k.drop()
		return channelMotion{}, k.errorf("%s: reply %g is not a speed in dB/s (the N77xx's are %g to %g): %w",
			q, speed, keysightSpeedRange[0], keysightSpeedRange[1], errGarbled)
	}
	hi, err := k.queryFloat(ctx, fmt.Sprintf(":INP%d:ATT? MAX", slot(ch)))
	if err != nil {
		return channelMotion{}, err
	}
	lo, err := k.queryFloat(ctx, fmt.Sprintf(":INP%d:ATT? MIN", slot(ch)))
	if err != nil {
		return channelMotion{}, err
	}
	m := channelMotion{speed: speed, span: math.Abs(hi - lo)}
	k.motion[ch] = m
	return m, nil
}

// moveLimit is how long *OPC? may answer 0 after channel ch is set to dB:
// the move from where the filter is now, at the channel's speed, both as
// the instrument reports them (opcLimit), and what it came from. Where
// the filter is, is the last read-back on this connection (the driver
// holds the instrument for a run: nothing else moves it in between), and
// asked only when there is none, so a setting after a setting asks
// :INP:ATT? once, for its own read-back.
func (k *Keysight) moveLimit(ctx context.Context, ch int, dB float64) (time.Duration, string, error) {
	m, err := k.channelMotion(ctx, ch)
	if err != nil {
		return 0, "", err
	}
	at, ok := k.stands[ch]
	if !ok {
		if at, err = k.queryFloat(ctx, fmt.Sprintf(":INP%d:ATT?", slot(ch))); err != nil {
			return 0, "", err
		}
		k.stands[ch] = at
	}
	move := math.Abs(dB - at)
	return k.opcLimit(move, m.speed), fmt.Sprintf("%.3f dB from %.3f dB at %g dB/s, round trip %v", move, at, m.speed, k.rtt), nil
}

// shutterLimit is how long *OPC? may answer 0 after channel ch's shutter
// is set: the shutter moves at the attenuation speed (N7744-90C
// :OUTPut:STATe), taken here as a sweep of the channel's whole range.
func (k *Keysight) shutterLimit(ctx context.Context, ch int) (time.Duration, string, error) {
	m, err := k.channelMotion(ctx, ch)
	if err != nil {
		return 0, "", err
	}
	return k.opcLimit(m.span, m.speed), fmt.Sprintf("the shutter, a sweep of %.3f dB at %g dB/s, round trip %v", m.span, m.speed, k.rtt), nil
}

// opcLimit is the *OPC? wait's limit for a move of dB at speed dB/s: the
// move's time, a quarter more (an eighth for transport.Poll's gap, which
// sees the end of a wait within an eighth of it, and an eighth for a
// filter slower than its setting says), four round trips as measured (the
// last asks) and the driver's Timeout (the last exchange's bound).
func (k *Keysight) opcLimit(dB, speed float64) time.Duration {
	move := time.Duration(dB / speed * float64(time.Second))
	return move + move/4 + 4*k.rtt + k.opts.Timeout
}

// waitOPC polls *OPC? until it answers 1, within limit.
func (k *Keysight) waitOPC(ctx context.Context, doing string, limit time.Duration) error {
	start := time.Now()
	opcCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := transport.Poll(opcCtx, func() (bool, error) {
		s, err := k.query(opcCtx, "*OPC?")
		if err != nil {
			return false, fmt.Errorf("%s: %w", doing, err)
		}
		switch s {
		case "1":
			return true, nil
		case "0":
			return false, nil
		}
		k.drop()
		return false, k.errorf("%s: *OPC? replied %q, expected 0 or 1: %w", doing, s, errGarbled)
	})
	// The limit may pass between asks or during one (the ask's own
	// deadline is the limit's): either way the filter had not stopped.
	if dl, _ := opcCtx.Deadline(); err != nil && !time.Now().Before(dl) {
		if cdl, ok := ctx.Deadline(); ok && !cdl.After(dl) {
			return k.errorf("%s: *OPC? still 0 at the caller's deadline, %v into a move given %v: %w", doing, time.Since(start).Round(time.Millisecond), limit, context.DeadlineExceeded)
		}
		return k.errorf("%s: *OPC? still 0 after %v: %w", doing, limit, context.DeadlineExceeded)
	}
	return err
}

// SetSpeed sets how fast channel ch's filter moves, in dB/s
// (:INP<slot>:ATT:SPE, N7744-90C "The INPut subtree": 0.1 to 1000 dB/s),
// reads the error queue and reads the speed back; the next move's wait is
// computed from the speed read back.
func (k *Keysight) SetSpeed(ctx context.Context, ch int, dBps float64) error {
	if err := k.checkChannel(ch); err != nil {
		return err
	}
	if dBps < keysightSpeedRange[0] || dBps > keysightSpeedRange[1] {
		return k.errorf("refused before sending: channel %d: speed %g dB/s outside [%g, %g] dB/s", ch, dBps, keysightSpeedRange[0], keysightSpeedRange[1])
	}
	doing := fmt.Sprintf("set channel %d's speed to %g dB/s", ch, dBps)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.line.Retry(ctx, func() error {
		delete(k.motion, ch)
		if err := k.send(ctx, fmt.Sprintf(":INP%d:ATT:SPE %g", slot(ch), dBps)); err != nil {
			return err
		}
		if err := k.checkErrors(ctx, doing); err != nil {
			return err
		}
		m, err := k.channelMotion(ctx, ch)
		if err != nil {
			return fmt.Errorf("%s: %w", doing, err)
		}
		if math.Abs(m.speed-dBps) > 1e-6*dBps {
			return k.errorf("%s: reads back %g dB/s", doing, m.speed)
		}
		return nil
	})
}

// SetAttenuationBound is how long SetAttenuation(ch, dB) may take, as the
// instrument's state says now: the *OPC? wait's limit for the move from
// where the filter is, and three Timeouts for the exchanges around it (the
// setting, the error queue, the read-back), twice over for the one try on
// a new connection. A run's undo of a setting is given this long.
func (k *Keysight) SetAttenuationBound(ctx context.Context, ch int, dB float64) (time.Duration, error) {
	if err := k.checkChannel(ch); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var limit time.Duration
	err := k.line.Retry(ctx, func() (err error) {
		limit, _, err = k.moveLimit(ctx, ch, dB)
		return err
	})
	return 2 * (limit + 3*k.opts.Timeout), err
}

// SetShutterBound is SetAttenuationBound for SetShutter(ch, ...).
func (k *Keysight) SetShutterBound(ctx context.Context, ch int) (time.Duration, error) {
	if err := k.checkChannel(ch); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var limit time.Duration
	err := k.line.Retry(ctx, func() (err error) {
		limit, _, err = k.shutterLimit(ctx, ch)
		return err
	})
	return 2 * (limit + 3*k.opts.Timeout), err
}

// ShutterOpen implements Shutter: :OUTP<slot>:STAT? (1 open, 0 closed).
func (k *Keysight) ShutterOpen(ctx context.Context, ch int) (bool, error) {
	if err := k.checkChannel(ch); err != nil {
		return false, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var open bool
	err := k.line.Retry(ctx, func() (err error) {
		open, err = k.shutter(ctx, ch)
		return err
	})
	return open, err
}

func (k *Keysight) shutter(ctx context.Context, ch int) (bool, error) {
	q := fmt.Sprintf(":OUTP%d:STAT?", slot(ch))
	s, err := k.query(ctx, q)
	if err != nil {
		return false, err
	}
	switch s {
	case "1":
		return true, nil
	case "0":
		return false, nil
	}
	k.drop()
	return false, k.errorf("%s: reply %q, expected 0 or 1: %w", q, s, errGarbled)
}

// SetShutter implements Shutter: :OUTP<slot>:STAT 1|0, the error queue,
// *OPC? (the shutter opens at the attenuation speed, N7744-90C
// :OUTPut:STATe) and a read-back.
func (k *Keysight) SetShutter(ctx context.Context, ch int, open bool) error {
	if err := k.checkChannel(ch); err != nil {
		return err
	}
	state, v := "close", 0
	if open {
		state, v = "open", 1
	}
	doing := fmt.Sprintf("%s the shutter of channel %d", state, ch)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.line.Retry(ctx, func() error {
		limit, why, err := k.shutterLimit(ctx, ch)
		if err != nil {
			return fmt.Errorf("%s: %w", doing, err)
		}
		k.opts.Transcript.Note("*OPC? wait up to %v: %s", limit, why)
		if err := k.send(ctx, fmt.Sprintf(":OUTP%d:STAT %d", slot(ch), v)); err != nil {
			return err
		}
		if err := k.waitOPC(ctx, doing, limit); err != nil {
			return err
		}
		if err := k.checkErrors(ctx, doing); err != nil {
			return err
		}
		got, err := k.shutter(ctx, ch)
		if err != nil {
			return fmt.Errorf("%s: %w", doing, err)
		}
		if got != open {
			return k.errorf("%s: the shutter reads back %s", doing, map[bool]string{true: "open", false: "closed"}[got])
		}
		return nil
	})
}

// Attenuation implements Attenuator; the reading is where the next
// move starts from.
func (k *Keysight) Attenuation(ctx context.Context, ch int) (float64, error) {
	return k.read(ctx, ch, fmt.Sprintf(":INP%d:ATT?", slot(ch)), true)
}

// OutputPower implements PowerMeter: the channel's built-in monitor, dBm.
func (k *Keysight) OutputPower(ctx context.Context, ch int) (float64, error) {
	return k.read(ctx, ch, fmt.Sprintf(":FETC%d:POW?", slot(ch)), false)
}

// read runs one numeric query on a channel, reconnecting first if needed;
// stands: the reading is where the channel's filter stands.
func (k *Keysight) read(ctx context.Context, ch int, q string, stands bool) (float64, error) {
	if err := k.checkChannel(ch); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var v float64
	err := k.line.Retry(ctx, func() (err error) {
		v, err = k.queryFloat(ctx, q)
		return err
	})
	if err == nil && stands {
		k.stands[ch] = v
	}
	return v, err
}

// Close implements Attenuator.
func (k *Keysight) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.line.Close()
}

var errUnknownDriver = errors.New("unknown driver")

func init() {
	register("keysight-n77xx", func(ctx context.Context, address string, opts Options) (Attenuator, error) {
		return OpenKeysight(ctx, address, opts)
	}, nil, CapPowerMeter, CapShutter, CapWavelength)
}
