package voa_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/drivers"
	"testbed/instruments/voa"
	"testbed/simlab/physics"
	simvoa "testbed/simlab/voa"
	"testbed/simlab/wire"
	"testbed/simlab/world"
	"testbed/transport"
)

// syncBuf is a transcript sink the test can read.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// keysightLab starts an N7764A emulator on TCP with one lit fibre on channel 1.
func keysightLab(t *testing.T) (*world.VOA, *wire.Faults, string) {
	t.Helper()
	w := world.New(1)
	v := w.NewVOA("voa1", "Keysight Technologies", "N7764A", "SIM001", "1.2.0", 4, 0, 40, 1.2, 2000)
	tr, _ := physics.TransceiverByName("25GBASE-SR")
	fec, _ := physics.FECByName("rs528")
	w.NewFibre("f", tr, fec, 1.0, 0.5, v.Channels[0])
	f := &wire.Faults{}
	srv := simvoa.NewKeysightServer(v, f)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return v, f, srv.Addr()
}

func openKeysight(t *testing.T, addr string, opts voa.Options) (*voa.Keysight, *syncBuf) {
	t.Helper()
	buf := &syncBuf{}
	opts.Transcript = transport.NewTranscript(buf)
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	k, err := voa.OpenKeysight(context.Background(), addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k, buf
}

func TestKeysightSetsSettlesAndReads(t *testing.T) {
	v, _, addr := keysightLab(t)
	k, tr := openKeysight(t, addr, voa.Options{})
	ctx := context.Background()
	id, _ := k.Identity(ctx)
	if id.Model != "N7764A" || id.Serial != "SIM001" || k.Channels() != 4 {
		t.Fatalf("identity %+v channels %d", id, k.Channels())
	}
	// The instrument powers up with its shutters closed: the monitor reads
	// its floor until the shutter is opened.
	if open, err := k.ShutterOpen(ctx, 1); err != nil || open {
		t.Fatalf("shutter at power-up open=%v, %v", open, err)
	}
	if err := k.SetShutter(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	if !v.Channels[0].Shutter() || v.Channels[1].Shutter() {
		t.Fatal("SetShutter(1) did not open channel 1 alone")
	}
	if err := k.SetAttenuation(ctx, 1, 12.5); err != nil {
		t.Fatal(err)
	}
	// Returned only once the modelled filter had stopped at the set point.
	if got := v.Channels[0].Attenuation(); math.Abs(got-12.5) > 1e-9 || v.Channels[0].SettleTime() != 0 {
		t.Fatalf("instrument at %.3f dB, still moving %v", got, v.Channels[0].SettleTime())
	}
	got, err := k.Attenuation(ctx, 1)
	if err != nil || math.Abs(got-12.5) > 1e-6 {
		t.Fatalf("Attenuation = %v, %v", got, err)
	}
	p, err := k.OutputPower(ctx, 1)
	want := -2.5 - 1.0 - 1.2 - 12.5 // tx - loss before - insertion - attenuation
	if err != nil || math.Abs(p-want) > 1e-6 {
		t.Fatalf("OutputPower = %v (%v), want %v", p, err, want)
	}
	if !strings.Contains(tr.String(), "> :INP1:ATT 12.500dB") || !strings.Contains(tr.String(), "> *OPC?") ||
		!strings.Contains(tr.String(), "> :OUTP1:POW:UNIT 0") || !strings.Contains(tr.String(), "> :FETC1:POW?") {
		t.Errorf("transcript lacks the exchange:\n%s", tr)
	}
	if err := k.SetShutter(ctx, 1, false); err != nil {
		t.Fatal(err)
	}
	if p, err := k.OutputPower(ctx, 1); err != nil || p != -80 {
		t.Fatalf("OutputPower behind a closed shutter = %v, %v", p, err)
	}
}

// Channels 1..4 of an N7764A are its slots 1, 3, 5 and 7 (N7744-90C,
// "Slot and Channel Numbers").
func TestKeysightChannelsAreSlots(t *testing.T) {
	v, _, addr := keysightLab(t)
	k, tr := openKeysight(t, addr, voa.Options{})
	ctx := context.Background()
	for ch := 1; ch <= 4; ch++ {
		if err := k.SetAttenuation(ctx, ch, float64(ch)); err != nil {
			t.Fatal(err)
		}
		if err := k.SetShutter(ctx, ch, true); err != nil {
			t.Fatal(err)
		}
	}
	for ch := 1; ch <= 4; ch++ {
		if got := v.Channels[ch-1].Target(); got != float64(ch) || !v.Channels[ch-1].Shutter() {
			t.Errorf("attenuator %d at %v dB, shutter open %v", ch, got, v.Channels[ch-1].Shutter())
		}
		want := fmt.Sprintf("> :INP%d:ATT %d.000dB", 2*ch-1, ch)
		if !strings.Contains(tr.String(), want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
}

// *OPC? answers 0 while the filter moves: the driver polls it and returns
// only once the attenuator has stopped.
func TestKeysightPollsOPCWhileMoving(t *testing.T) {
	w := world.New(1)
	v := w.NewVOA("voa1", "Keysight Technologies", "N7762A", "SIM002", "1.2.0", 2, 0, 40, 1.2, 100)
	srv := simvoa.NewKeysightServer(v, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	k, tr := openKeysight(t, srv.Addr(), voa.Options{})
	if err := k.SetAttenuation(context.Background(), 2, 20); err != nil { // 200 ms at 100 dB/s
		t.Fatal(err)
	}
	if v.Channels[1].SettleTime() != 0 || v.Channels[1].Attenuation() != 20 {
		t.Fatalf("returned while moving: %v dB", v.Channels[1].Attenuation())
	}
	if !strings.Contains(tr.String(), "< 0") || !strings.Contains(tr.String(), "< 1") {
		t.Errorf("transcript does not show *OPC? answering 0 then 1:\n%s", tr)
	}
}

// A slow move is asked *OPC? a number of times that grows with the
// logarithm of its length (transport.Poll: gaps of 1 ms for the first 8
// ms, then an eighth of the time waited), not a steady 100 times a second:
// a 1 s move (10 dB at 10 dB/s) at most 8 + ln(T / 8 ms) / ln(9/8) + 2
// times (each gap adds at least an eighth to the time waited), T the time
// from the first *OPC? to the last as the transcript stamps them. A
// loaded machine only makes the asks fewer.
func TestKeysightAsksASlowMoveRarely(t *testing.T) {
	w := world.New(1)
	v := w.NewVOA("voa1", "Keysight Technologies", "N7762A", "SIM002", "1.2.0", 2, 0, 40, 1.2, 10)
	srv := simvoa.NewKeysightServer(v, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	k, tr := openKeysight(t, srv.Addr(), voa.Options{})
	if err := k.SetAttenuation(context.Background(), 2, 10); err != nil {
		t.Fatal(err)
	}
	var first, last time.Time
	n := 0
	for _, l := range strings.Split(tr.String(), "\n") {
		stamp, rest, _ := strings.Cut(l, " ")
		if rest != "> *OPC?" {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05.000000Z", stamp)
		if err != nil {
			t.Fatalf("transcript line %q: %v", l, err)
		}
		if n == 0 {
			first = at
		}
		last, n = at, n+1
	}
	waited := last.Sub(first)
	bound := 10 + math.Log(max(1, float64(waited)/float64(8*time.Millisecond)))/math.Log(9.0/8)
	if float64(n) > bound {
		t.Fatalf("*OPC? asked %d times over %v, want at most %.0f", n, waited, bound)
	}
	t.Logf("*OPC? asked %d times over %v (at most %.0f)", n, waited, bound)
}

// opcLimits are the *OPC? waits' limits the driver noted in its
// transcript ("# *OPC? wait up to 850ms: ...").
func opcLimits(t *testing.T, tr string) []time.Duration {
	return notedLimits(t, tr, " # *OPC? wait up to ")
}

// notedLimits are the durations following marker on the transcript's
// lines (a driver's note of a wait's limit: "<marker>850ms: why").
func notedLimits(t *testing.T, tr, marker string) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, l := range strings.Split(tr, "\n") {
		_, rest, _ := strings.Cut(l, marker)
		if rest == "" {
			continue
		}
		d, err := time.ParseDuration(strings.SplitN(rest, ":", 2)[0])
		if err != nil {
			t.Fatalf("transcript line %q: %v", l, err)
		}
		out = append(out, d)
	}
	return out
}

// The *OPC? wait lasts as long as the move takes at the channel's speed as
// the instrument reports it (asked again once the driver has set it), not
// a fixed Timeout + 30 s: a move of six Timeouts at 1 dB/s (600 ms at a
// Timeout of 100 ms) is waited out, and the limit noted is the move's time
// and at most a quarter of it, four round trips and the Timeout more.
//
// On a machine loaded to 20-30 one exchange took over 100 ms, so a
// deadline passed without a fault of the driver's: where one does, the
// whole is tried again on a new emulator at twice the Timeout and twice the
// move, up to 1.6 s. A driver that waits a move out for less than it takes
// (its Timeout, or the speed it had before it set it) fails at every
// Timeout; a limit longer than the move's fails on the notes, at once.
func TestKeysightWaitsAMoveAtTheChannelsSpeed(t *testing.T) {
	for timeout := 100 * time.Millisecond; ; timeout *= 2 {
		err := keysightWaitsAMove(t, timeout)
		if err == nil {
			return
		}
		// A context's deadline (an exchange's Timeout, the *OPC? limit)
		// or a connection's (a dial, a write).
		passed := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
		if !passed || timeout >= 1600*time.Millisecond {
			t.Fatal(err)
		}
		t.Logf("at a Timeout of %v a deadline passed (%v): again at twice it", timeout, err)
	}
}

// keysightWaitsAMove sets a new N7762A emulator's channel 2 to 1 dB, its
// speed to 1 dB/s and then six Timeouts further, with the driver's
// Timeout timeout: it returns the driver's error, and fails t on what the
// instrument and the transcript show after a setting that succeeded.
func keysightWaitsAMove(t *testing.T, timeout time.Duration) error {
	t.Helper()
	w := world.New(1)
	v := w.NewVOA("voa1", "Keysight Technologies", "N7762A", "SIM002", "1.2.0", 2, 0, 40, 1.2, 1000)
	srv := simvoa.NewKeysightServer(v, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	buf := &syncBuf{}
	k, err := voa.OpenKeysight(context.Background(), srv.Addr(), voa.Options{Timeout: timeout, Transcript: transport.NewTranscript(buf)})
	if err != nil {
		return err
	}
	defer k.Close()
	ctx := context.Background()
	if err := k.SetAttenuation(ctx, 2, 1); err != nil { // 1 ms at 1000 dB/s: the speed is asked
		return err
	}
	if err := k.SetSpeed(ctx, 2, 1); err != nil {
		return err
	}
	if got := v.Channels[1].Speed(); got != 1 {
		t.Fatalf("the instrument moves at %g dB/s, want 1", got)
	}
	move := 6 * timeout
	to := 1 + move.Seconds() // dB at 1 dB/s: whole milliseconds, as the driver sets it
	if err := k.SetAttenuation(ctx, 2, to); err != nil {
		return fmt.Errorf("a %v move at 1 dB/s with a Timeout of %v: %w", move, timeout, err)
	}
	if got := v.Channels[1].Attenuation(); math.Abs(got-to) > 1e-9 {
		t.Fatalf("the filter stands at %g dB, want %g", got, to)
	}
	tr := buf.String()
	if n := strings.Count(tr, "> :INP3:ATT:SPE?"); n != 2 {
		t.Errorf("the speed was asked %d times, want 2 (once, then after it was set)", n)
	}
	lims := opcLimits(t, tr)
	if len(lims) != 2 {
		t.Fatalf("%d *OPC? waits noted, want 2:\n%s", len(lims), tr)
	}
	// The longest round trip the driver measured, as it noted it.
	notes := strings.Split(tr, "# *OPC? wait up to ")
	_, rt, _ := strings.Cut(notes[len(notes)-1], "round trip ")
	rtt, err := time.ParseDuration(strings.TrimSpace(strings.SplitN(rt, "\n", 2)[0]))
	if err != nil {
		t.Fatalf("the note of the second wait gives no round trip: %v", err)
	}
	if l := lims[1]; l < move-time.Millisecond || l > move+move/4+4*rtt+timeout+time.Millisecond {
		t.Errorf("the %v move was given %v (round trip %v, Timeout %v)", move, l, rtt, timeout)
	}
	t.Logf("Timeout %v: *OPC? limits %v", timeout, lims)
	return nil
}

// A filter that moves slower than its speed says (a stuck stepper) is
// given up on at the limit its speed gives: 0.3 dB at the 1 dB/s the
// instrument reported is some 475 ms, while the filter, slowed to 0.1 dB/s
// behind the driver's back, takes 3 s. With a fixed Timeout + 30 s the
// wait outlasted the move and reported nothing wrong.
func TestKeysightGivesUpOnAMoveSlowerThanItsSpeed(t *testing.T) {
	w := world.New(1)
	v := w.NewVOA("voa1", "Keysight Technologies", "N7762A", "SIM002", "1.2.0", 2, 0, 40, 1.2, 1)
	srv := simvoa.NewKeysightServer(v, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	k, tr := openKeysight(t, srv.Addr(), voa.Options{Timeout: 100 * time.Millisecond})
	ctx := context.Background()
	if err := k.SetAttenuation(ctx, 1, 0.1); err != nil { // 100 ms at 1 dB/s: the speed is asked
		t.Fatal(err)
	}
	v.Channels[0].SetSpeed(0.1)
	err := k.SetAttenuation(ctx, 1, 0.4)
	if err == nil || !strings.Contains(err.Error(), "*OPC? still 0 after") {
		t.Fatalf("a 3 s move given the time of a 300 ms one: %v", err)
	}
	if lims := opcLimits(t, tr.String()); len(lims) != 2 || lims[1] >= 3*time.Second {
		t.Fatalf("limits %v, want two, the second under the 3 s the filter takes", lims)
	}
}

// A setting asks where the filter stands (:INP:ATT?) once, for its
// read-back after *OPC?: the move's size for the *OPC? limit is from the
// last read-back on the connection, asked only on the first setting of a
// connection. Three settings of channel 2 ask 4 times, each setting's one
// after its *OPC? (where it asked 6, one before each setting too); a new
// connection asks again.
func TestKeysightAsksWhereTheFilterStandsOncePerSetting(t *testing.T) {
	_, faults, addr := keysightLab(t)
	k, tr := openKeysight(t, addr, voa.Options{})
	ctx := context.Background()
	for _, dB := range []float64{1, 2.5, 0.5} {
		if err := k.SetAttenuation(ctx, 2, dB); err != nil {
			t.Fatal(err)
		}
	}
	// Each setting's exchange, from the line that sends it to the next's.
	var sets [][]string
	for _, l := range strings.Split(tr.String(), "\n") {
		_, rest, _ := strings.Cut(l, " ")
		if strings.HasPrefix(rest, "> :INP3:ATT ") {
			sets = append(sets, nil)
		}
		if len(sets) > 0 {
			sets[len(sets)-1] = append(sets[len(sets)-1], rest)
		}
	}
	if n := strings.Count(tr.String(), "> :INP3:ATT?\n"); n != 4 || len(sets) != 3 {
		t.Fatalf("three settings (%d sent) asked :INP3:ATT? %d times, want 4:\n%s", len(sets), n, tr)
	}
	for i, ex := range sets {
		opc, asked := -1, 0
		for j, l := range ex {
			switch l {
			case "> *OPC?":
				opc = j
			case "> :INP3:ATT?":
				asked++
				if opc < 0 {
					t.Errorf("setting %d asked :INP3:ATT? before its *OPC?: %q", i+1, ex)
				}
			}
		}
		if asked != 1 {
			t.Errorf("setting %d read back %d times: %q", i+1, asked, ex)
		}
	}
	// A new connection may meet a filter moved by hand: it is asked again.
	faults.DropNext(1)
	if err := k.SetAttenuation(ctx, 2, 3); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(tr.String(), "> :INP3:ATT?\n"); n != 6 {
		t.Errorf("a setting on a new connection: :INP3:ATT? asked %d times in all, want 6", n)
	}
}

func TestKeysightRefusesOutOfLimitsBeforeSending(t *testing.T) {
	v, _, addr := keysightLab(t)
	k, tr := openKeysight(t, addr, voa.Options{Limits: &voa.Limits{MinDB: 0, MaxDB: 20}})
	err := k.SetAttenuation(context.Background(), 2, 25)
	if err == nil || !strings.Contains(err.Error(), "outside limits") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(tr.String(), ":INP2:ATT 25") || v.Channels[1].Target() != 0 {
		t.Fatalf("an out-of-limit value reached the instrument")
	}
	if err := k.SetAttenuation(context.Background(), 5, 1); err == nil {
		t.Fatal("channel 5 of a 4-channel instrument accepted")
	}
}

func TestKeysightSurfacesDeviceErrorQueue(t *testing.T) {
	v, faults, addr := keysightLab(t)
	k, _ := openKeysight(t, addr, voa.Options{})
	faults.FailNext(-222, "Data out of range")
	err := k.SetAttenuation(context.Background(), 1, 3)
	if err == nil || !strings.Contains(err.Error(), `-222,"Data out of range"`) || !strings.Contains(err.Error(), "set channel 1 to 3.00 dB") {
		t.Fatalf("error %v", err)
	}
	if v.Channels[0].Target() != 0 {
		t.Fatal("the failed command moved the filter")
	}
	// The queue was drained: the next setting succeeds.
	if err := k.SetAttenuation(context.Background(), 1, 3); err != nil {
		t.Fatalf("after a device error: %v", err)
	}
}

func TestKeysightTimeoutAndReconnect(t *testing.T) {
	_, faults, addr := keysightLab(t)
	k, tr := openKeysight(t, addr, voa.Options{Timeout: 300 * time.Millisecond})
	faults.StallNext(1)
	start := time.Now()
	_, err := k.Attenuation(context.Background(), 1)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled query: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the deadline was not honoured")
	}
	// The connection was out of step; the next call redials and works.
	if _, err := k.Attenuation(context.Background(), 1); err != nil {
		t.Fatalf("after a timeout: %v", err)
	}
	// A dropped connection is redialled and the read retried once, in the same call.
	faults.DropNext(1)
	if _, err := k.Attenuation(context.Background(), 1); err != nil {
		t.Fatalf("one dropped connection: %v", err)
	}
	faults.DropNext(1)
	if err := k.SetAttenuation(context.Background(), 1, 4); err != nil {
		t.Fatalf("a setting across a dropped connection: %v", err)
	}
	// Dropped again on the retry: the call fails, and says why.
	faults.DropNext(2)
	if _, err := k.Attenuation(context.Background(), 1); err == nil || !transport.IsConnectionLost(err) {
		t.Fatalf("two dropped connections: %v", err)
	}
	if _, err := k.Attenuation(context.Background(), 1); err != nil {
		t.Fatalf("after dropped connections: %v", err)
	}
	if !strings.Contains(tr.String(), "reconnecting") {
		t.Errorf("transcript does not say it reconnected")
	}
}

// One garbled reply is retried on a new connection, for reads and for
// settings (absolute, confirmed by read-back); two fail clearly.
func TestKeysightRetriesOnceOnGarbage(t *testing.T) {
	v, faults, addr := keysightLab(t)
	k, tr := openKeysight(t, addr, voa.Options{})
	ctx := context.Background()
	faults.GarbleNext(1)
	if _, err := k.Attenuation(ctx, 1); err != nil {
		t.Fatalf("one garbled read: %v", err)
	}
	if !strings.Contains(tr.String(), "trying once more") {
		t.Errorf("transcript does not say it retried:\n%s", tr)
	}
	// The setting's first reply (*OPC?) is garbled: the setting is sent
	// again on a new connection.
	faults.GarbleNext(1)
	if err := k.SetAttenuation(ctx, 1, 5); err != nil {
		t.Fatalf("a setting with one garbled reply: %v", err)
	}
	if got := v.Channels[0].Target(); got != 5 {
		t.Fatalf("set to %v", got)
	}
	faults.GarbleNext(1)
	if err := k.SetShutter(ctx, 2, true); err != nil || !v.Channels[1].Shutter() {
		t.Fatalf("a shutter setting with one garbled reply: %v", err)
	}
	faults.GarbleNext(1)
	if open, err := k.ShutterOpen(ctx, 2); err != nil || !open {
		t.Fatalf("a shutter read with one garbled reply: %v %v", open, err)
	}
	faults.GarbleNext(2)
	_, err := k.Attenuation(ctx, 1)
	if err == nil || !strings.Contains(err.Error(), "keysight-n77xx") {
		t.Fatalf("two garbled replies: %v", err)
	}
	if _, err := k.Attenuation(ctx, 1); err != nil {
		t.Fatalf("after two garbled replies: %v", err)
	}
}

func ozLab(t *testing.T) (*world.VOA, *wire.Faults, string) {
	t.Helper()
	w := world.New(2)
	v := w.NewVOA("voa2", "OZ Optics", "DD-100-MC", "OZ0001", "3.10", 1, 0, 55, 0.8, 400)
	f := &wire.Faults{}
	srv := simvoa.NewOZOpticsServer(v, f)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return v, f, srv.Address()
}

func openOZ(t *testing.T, addr string, opts voa.Options) (*voa.OZOptics, *syncBuf) {
	t.Helper()
	buf := &syncBuf{}
	opts.Transcript = transport.NewTranscript(buf)
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	o, err := voa.OpenOZOptics(context.Background(), addr, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o, buf
}

func TestOZOpticsOverPTY(t *testing.T) {
	v, _, addr := ozLab(t)
	o, tr := openOZ(t, addr, voa.Options{})
	ctx := context.Background()
	id, _ := o.Identity(ctx)
	if id.Model != "DD-100-MC" || id.Firmware != "3.10" || id.Serial != "OZ0001" {
		t.Fatalf("identity %+v", id)
	}
	if err := o.SetAttenuation(ctx, 1, 36.5); err != nil {
		t.Fatal(err)
	}
	if got := v.Channels[0].Attenuation(); got != 36.5 {
		t.Fatalf("device at %v dB", got)
	}
	if !strings.Contains(tr.String(), "< Pos:4060") {
		t.Errorf("transcript lacks the position reply:\n%s", tr)
	}
	// The device's own maximum (CD: MAX ATTEN:55.00) is a limit too.
	if err := o.SetAttenuation(ctx, 1, 60); err == nil || !strings.Contains(err.Error(), "outside limits") {
		t.Fatalf("60 dB: %v", err)
	}
}

func TestOZOpticsErrorsAndStall(t *testing.T) {
	v, faults, addr := ozLab(t)
	o, _ := openOZ(t, addr, voa.Options{Timeout: 300 * time.Millisecond})
	ctx := context.Background()
	faults.FailNext(7, "")
	err := o.SetAttenuation(ctx, 1, 5)
	if err == nil || !strings.Contains(err.Error(), "device error 7 (motor voltage)") {
		t.Fatalf("device error: %v", err)
	}
	if v.Channels[0].Target() != 0 {
		t.Fatal("the failed command moved the motor")
	}
	faults.StallNext(1)
	if _, err := o.Attenuation(ctx, 1); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stall: %v", err)
	}
	// The port is reopened on the next call and the device answers again.
	if err := o.SetAttenuation(ctx, 1, 5); err != nil {
		t.Fatalf("after a stall: %v", err)
	}
	// One garbled reply is read again on the reopened port; two fail,
	// saying what was expected.
	faults.GarbleNext(1)
	if got, err := o.Attenuation(ctx, 1); err != nil || got != 5 {
		t.Fatalf("one garbled read: %v, %v", got, err)
	}
	faults.GarbleNext(1)
	if err := o.SetAttenuation(ctx, 1, 7); err != nil || v.Channels[0].Attenuation() != 7 {
		t.Fatalf("a setting with a garbled reply: %v", err)
	}
	faults.GarbleNext(2)
	if _, err := o.Attenuation(ctx, 1); err == nil || !strings.Contains(err.Error(), "ozoptics-dd100") || !strings.Contains(err.Error(), "expected") {
		t.Fatalf("two garbled replies: %v", err)
	}
}

func TestOpenUnknownDriver(t *testing.T) {
	_, err := voa.Open(context.Background(), "acme-9000", "tcp://127.0.0.1:1", voa.Options{})
	if err == nil || !strings.Contains(err.Error(), "keysight-n77xx") {
		t.Fatalf("error %v does not list the known drivers", err)
	}
}

// Opening reads the identity, an idempotent read: one garbled reply or one
// dropped connection is tried once more; two are an error.
func TestKeysightOpenRetriesOnce(t *testing.T) {
	_, faults, addr := keysightLab(t)
	ctx := context.Background()
	for _, inject := range []func(){func() { faults.GarbleNext(1) }, func() { faults.DropNext(1) }} {
		inject()
		var tr syncBuf
		k, err := voa.OpenKeysight(ctx, addr, voa.Options{Timeout: 2 * time.Second, Transcript: transport.NewTranscript(&tr)})
		if err != nil {
			t.Fatalf("open over one fault: %v", err)
		}
		k.Close()
		if !strings.Contains(tr.String(), "trying once more") {
			t.Errorf("transcript does not say it retried:\n%s", tr.String())
		}
	}
	faults.GarbleNext(2)
	if k, err := voa.OpenKeysight(ctx, addr, voa.Options{Timeout: 2 * time.Second}); err == nil {
		k.Close()
		t.Fatal("open over two garbled replies succeeded")
	}
}

// ozLabAt starts a DD-100-MC emulator whose stepper stands at dB and
// moves at speed dB/s.
func ozLabAt(t *testing.T, dB, speed float64) (*world.VOA, string) {
	t.Helper()
	v := world.New(3).NewVOA("voa2", "OZ Optics", "DD-100-MC", "OZ0002", "3.10", 1, 0, 55, 0.8, 0)
	v.Channels[0].SetAttenuation(dB) // at once: no speed yet
	v.Channels[0].SetSpeed(speed)
	srv := simvoa.NewOZOpticsServer(v, nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return v, srv.Address()
}

// doneLimits are the motor waits' limits the DD-100 driver noted in its
// transcript ("# Done wait up to 318ms: ...").
func doneLimits(t *testing.T, tr string) []time.Duration {
	return notedLimits(t, tr, " # Done wait up to ")
}

// A DD-100 move is waited out for its share of the time the manual allows
// for a run over the whole range (homing's 30 s over MAX ATTEN 55 dB):
// 1 dB at the stepper's 1.9 dB/s takes 526 ms, given 545 ms, four round
// trips and the Timeout of 300 ms. At the 5 dB/s the driver assumed it
// was given 500 ms and failed.
func TestOZOpticsWaitsAMoveForItsShareOfTheTravelTime(t *testing.T) {
	v, addr := ozLabAt(t, 0, 1.9)
	o, tr := openOZ(t, addr, voa.Options{Timeout: 300 * time.Millisecond})
	ctx := context.Background()
	if _, err := o.Attenuation(ctx, 1); err != nil { // where it stands: 0 dB
		t.Fatal(err)
	}
	if err := o.SetAttenuation(ctx, 1, 1); err != nil {
		t.Fatalf("a 526 ms move: %v", err)
	}
	if got := v.Channels[0].Attenuation(); math.Abs(got-1) > 1e-9 {
		t.Fatalf("the stepper stands at %g dB", got)
	}
	lims := doneLimits(t, tr.String())
	share := 30 * time.Second / 55 // 1 dB of 55 dB
	if len(lims) != 1 || lims[0] < share+300*time.Millisecond {
		t.Fatalf("Done limits %v, want one of at least %v and the Timeout", lims, share)
	}
}

// Homing is given the whole travel time (the step count may be off by
// any amount), four round trips and the Timeout, and past it fails naming
// the port and the bound: a stepper at 10 dB homing at 1 dB/s (10 s) with
// a travel time of 200 ms and a Timeout of 1 s. A homing within it answers how far the count
// was off and leaves the attenuator at its minimum.
func TestOZOpticsHomingIsBoundedByTheTravelTime(t *testing.T) {
	_, addr := ozLabAt(t, 10, 1)
	o, tr := openOZ(t, addr, voa.Options{Timeout: time.Second, TravelTime: 200 * time.Millisecond})
	ctx := context.Background()
	_, err := o.Home(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "ozoptics-dd100 "+addr) ||
		!strings.Contains(err.Error(), "H: no Done within") || !strings.Contains(err.Error(), "55.00 dB in 200ms") {
		t.Fatalf("a 10 s homing given 200 ms of travel: %v", err)
	}
	if lims := doneLimits(t, tr.String()); len(lims) != 1 || lims[0] < 1200*time.Millisecond || lims[0] > 10*time.Second {
		t.Fatalf("Done limits %v, want one of 200 ms of travel and the Timeout", lims)
	}

	v, addr := ozLabAt(t, 10, 1000)
	o, _ = openOZ(t, addr, voa.Options{})
	if diff, err := o.Home(ctx); err != nil || diff != 0 {
		t.Fatalf("home: Diff=%d, %v", diff, err)
	}
	if got, err := o.Attenuation(ctx, 1); err != nil || got != 0 || v.Channels[0].Attenuation() != 0 {
		t.Fatalf("after homing the driver reads %g dB (%v), the stepper stands at %g", got, err, v.Channels[0].Attenuation())
	}
}

// Homing runs the DD-100 to 0 dB: with limits that keep it above that
// (what the inventory's limits.min_db protects, a receiver), the driver
// refuses before sending H, and the attenuator stays where it stands.
func TestOZOpticsHomingRefusedBelowTheLimits(t *testing.T) {
	v, addr := ozLabAt(t, 10, 1000)
	o, tr := openOZ(t, addr, voa.Options{Limits: &voa.Limits{MinDB: 3, MaxDB: 55}})
	_, err := o.Home(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refused before sending") || !strings.Contains(err.Error(), "below its limit of 3.00 dB") {
		t.Fatalf("homing with limits.min_db 3: %v", err)
	}
	if strings.Contains(tr.String(), "> H") || v.Channels[0].Attenuation() != 10 {
		t.Fatalf("H sent, or the attenuator moved (%g dB):\n%s", v.Channels[0].Attenuation(), tr.String())
	}
}

// A run's undo of a DD-100 setting is given the move back's share of the
// travel time, as the driver's registration says (drivers.Driver.UndoBound),
// where the driver said nothing and the run's fixed 30 s cut a move over
// the range (55 dB in the manual's 30 s, with the exchanges around it).
// The bound holds eight of the driver's longest round trip (four a try),
// each no longer than the call it was measured in (the open's E0 and CD,
// the read's A?): a fixed second for them failed on a machine loaded to
// 20-30 (17.6 s against 17 s).
func TestOZOpticsUndoIsGivenTheMovesShare(t *testing.T) {
	_, addr := ozLabAt(t, 0, 1000)
	const timeout = time.Second
	t0 := time.Now()
	dev, err := voa.Open(context.Background(), "ozoptics-dd100", addr, voa.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Since(t0)
	t.Cleanup(func() { dev.Close() })
	reg, _ := drivers.Lookup(voa.Kind, "ozoptics-dd100")
	bound := reg.UndoBound[voa.UndoAttenuation]
	if bound == nil {
		t.Fatal("the DD-100's registration says nothing of how long an undo of a setting takes")
	}
	ctx := context.Background()
	// Where it stands is not read yet: the move may be from the far end.
	if got, err := bound(ctx, dev, []byte(`{"channel":1,"db":0}`)); err != nil || got < 2*30*time.Second+4*timeout {
		t.Fatalf("bound of a move to 0 dB from where it may stand: %v, %v", got, err)
	}
	t0 = time.Now()
	if _, err := dev.Attenuation(ctx, 1); err != nil {
		t.Fatal(err)
	}
	rtt := max(opened, time.Since(t0))
	got, err := bound(ctx, dev, []byte(`{"channel":1,"db":11}`))
	share := 2 * 30 * time.Second / 5 // twice 11 dB of 55 dB
	if err != nil || got < share+4*timeout || got > share+4*timeout+8*rtt {
		t.Fatalf("bound of an 11 dB move: %v (%v), want twice 6 s and two Timeouts, with eight round trips of at most %v", got, err, rtt)
	}
}
