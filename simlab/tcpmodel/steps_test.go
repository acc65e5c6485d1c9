package tcpmodel

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"testbed/simlab/lgmodel"
)

// A flow stepped over a link that never changes is the flow run at once.
func TestStepsOverOneLinkAreOneRun(t *testing.T) {
	c, err := DefaultFlow("cubic", lgmodel.Ordered, 100e9, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	c.Duration = 6 * time.Millisecond
	whole, err := RunFlow(c, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	fl, err := NewFlow(c, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for at := 700 * time.Microsecond; ; at += 700 * time.Microsecond {
		if err := fl.Step(min(at, c.Duration), Link{Config: c.Link, Loss: c.Loss}); err != nil {
			t.Fatal(err)
		}
		if at >= c.Duration {
			break
		}
	}
	stepped := fl.Result()
	if whole.Retransmits == 0 || stepped.GoodputBps != whole.GoodputBps || !reflect.DeepEqual(stepped.Samples, whole.Samples) ||
		stepped.Retransmits != whole.Retransmits || stepped.LinkLost != whole.LinkLost {
		t.Errorf("stepped: %.4g b/s, %d retx, %d lost; at once: %.4g b/s, %d retx, %d lost",
			stepped.GoodputBps, stepped.Retransmits, stepped.LinkLost, whole.GoodputBps, whole.Retransmits, whole.LinkLost)
	}
}

// Loss, then LinkGuardian, switched on under a running flow (Fig. 9's
// sequence): the unprotected stretch loses originals and DCTCP resends
// them; once protection with backpressure is on, nothing more is lost on
// the link and nothing is sent again, and the reorder buffer fills.
func TestProtectionSwitchedOnUnderTheFlow(t *testing.T) {
	off, err := DefaultFlow("dctcp", lgmodel.Off, 100e9, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	on, err := lgmodel.Defaults(lgmodel.Ordered, 100e9, 1e-3, 0)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := NewFlow(off, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		until time.Duration
		link  Link
	}{{2 * time.Millisecond, Link{off.Link, 0}}, {6 * time.Millisecond, Link{off.Link, 1e-3}}, {12 * time.Millisecond, Link{on, 1e-3}}}
	var lostAt6 int64
	var retxLate int64
	var rx int64
	for _, s := range steps {
		if err := fl.Step(s.until, s.link); err != nil {
			t.Fatal(err)
		}
		if s.until == 6*time.Millisecond {
			lostAt6 = fl.Result().LinkLost
		}
	}
	for _, s := range fl.Result().Samples {
		if s.At > 7*time.Millisecond {
			retxLate += s.Retransmits
			rx = max(rx, s.RxBufBytes)
		}
	}
	r := fl.Result()
	t.Logf("lost %d unprotected, %d in all; %d retransmits, %d after 7 ms; reorder buffer up to %d B", lostAt6, r.LinkLost, r.Retransmits, retxLate, rx)
	if lostAt6 == 0 || r.Retransmits < lostAt6 {
		t.Errorf("unprotected: %d lost, %d retransmits", lostAt6, r.Retransmits)
	}
	if r.LinkLost != lostAt6 || retxLate != 0 || rx == 0 {
		t.Errorf("protected: %d more lost, %d retransmits after 7 ms, reorder buffer up to %d B", r.LinkLost-lostAt6, retxLate, rx)
	}
	if err := fl.Step(time.Millisecond, steps[0].link); err == nil {
		t.Error("a step back in time was taken")
	}
}
