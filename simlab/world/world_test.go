package world

import (
	"testing"
	"time"

	"testbed/simlab/physics"
)

// A fibre's LightStamp: steady while nothing moves its light, its stamp
// moved by every setter of its VOA channel and by SetImpairment, not
// steady while the channel moves (on the world's clock, here a fake one)
// or an impairment is set, and the light the same whenever it says
// steady with the same stamp. Fails when a setter leaves the stamp alone,
// or when a moving channel or an impaired fibre reads steady.
func TestLightStampMovesWithEveryChange(t *testing.T) {
	w := New(1)
	now := time.Unix(1000, 0)
	w.now = func() time.Time { return now }
	tr, err := physics.TransceiverByName("100GBASE-SR4")
	if err != nil {
		t.Fatal(err)
	}
	fec, err := physics.FECByName("rs528")
	if err != nil {
		t.Fatal(err)
	}
	ch := w.NewVOA("voa1", "sim", "N7764A", "1", "1", 1, 0, 60, 1.5, 10).Channels[0]
	f := w.NewFibre("f", tr, fec, 1, 1, ch)
	plain := w.NewFibre("p", tr, fec, 1, 1, nil)
	steadyAt := func(f *Fibre, what string) uint64 {
		t.Helper()
		s, ok := f.LightStamp()
		if !ok {
			t.Fatalf("%s: not steady", what)
		}
		if s != f.Stamp() {
			t.Fatalf("%s: LightStamp's stamp %d, Stamp %d", what, s, f.Stamp())
		}
		return s
	}
	s := steadyAt(f, "made")
	steadyAt(plain, "a fibre without a VOA")
	for _, c := range []struct {
		what string
		set  func()
	}{
		{"SetAttenuation", func() { ch.SetAttenuation(3) }},
		{"SetShutter", func() { ch.SetShutter(false) }},
		{"SetShutter again", func() { ch.SetShutter(true) }},
		{"SetOffset", func() { ch.SetOffset(0.5) }},
		{"SetWavelength", func() { ch.SetWavelength(1310e-9) }},
		{"SetSpeed", func() { ch.SetSpeed(20) }},
	} {
		c.set()
		now = now.Add(time.Hour) // any motion has ended
		n := steadyAt(f, c.what)
		if n == s {
			t.Errorf("%s: the stamp stayed %d", c.what, n)
		}
		s = n
	}

	// Moving: 2 dB at 20 dB/s is 100 ms of the world's clock.
	light := f.EyePowerDBmAt(0)
	ch.SetAttenuation(5)
	s = f.Stamp()
	start := now
	for _, dt := range []time.Duration{0, 50 * time.Millisecond, 99 * time.Millisecond} {
		now = start.Add(dt)
		if _, ok := f.LightStamp(); ok {
			t.Errorf("%v into a 100 ms motion: steady", dt)
		}
	}
	now = start.Add(100 * time.Millisecond)
	if steadyAt(f, "the motion ended") != s {
		t.Error("the stamp moved with the clock")
	}
	if got := f.EyePowerDBmAt(0); got != light-2 {
		t.Errorf("the light after the motion: %v dBm, want %v", got, light-2)
	}
	now = now.Add(time.Hour)
	if got := f.EyePowerDBmAt(time.Hour); got != light-2 || steadyAt(f, "an hour on") != s {
		t.Errorf("steady with the same stamp, the light moved: %v dBm, want %v", got, light-2)
	}

	// A scenario's impairment moves the light with the lab clock.
	f.SetImpairment(func(t time.Duration) (float64, float64) { return 0, t.Seconds() })
	if n, ok := f.LightStamp(); ok || n == s {
		t.Errorf("impaired: steady %t, stamp %d (was %d)", ok, n, s)
	}
	f.SetImpairment(nil)
	if n := steadyAt(f, "the impairment taken off"); n == s {
		t.Error("SetImpairment(nil): the stamp stayed")
	}
}
