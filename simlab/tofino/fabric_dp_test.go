package tofino

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"testbed/p4/ecmp"
	lg "testbed/p4/linkguardian"
	"testbed/simlab/physics"
	"testbed/simlab/world"
)

// A switch that restarts with another program leaves or joins the ecmp
// fabric at the next chunk of an advance, though the dataplane keeps
// which switches its fabrics are made of between chunks.
func TestFabricFollowsAProgramRestart(t *testing.T) {
	b := newECBench(t, 1, 2, 1, "BF_SPEED_100G")
	spine := b.spines[0]
	in := func() bool {
		b.dp.mu.Lock()
		defer b.dp.mu.Unlock()
		return b.dp.ec != nil && slices.Contains(b.dp.ec.sws, spine)
	}
	restart := func(program string) {
		spine.mu.Lock()
		spine.reset(program)
		spine.mu.Unlock()
	}
	b.wait(time.Millisecond)
	if !in() {
		t.Fatal("the spine is not in the ecmp fabric")
	}
	restart("")
	b.wait(2 * time.Millisecond)
	if in() {
		t.Error("a spine restarted without a program is still in the ecmp fabric")
	}
	restart(ecmp.Program)
	b.wait(3 * time.Millisecond)
	if !in() {
		t.Error("a spine restarted with ecmp is not back in the ecmp fabric")
	}
}

// BenchmarkAdvanceIdleLinkGuardianLab is a second of an idle dataplane's
// clock (a thousand chunks) per op, in a lab of 24 switches joined in
// pairs by 48 fibres that run LinkGuardian's programs, no Stardust or
// ecmp: what every chunk costs when no fabric has work.
func BenchmarkAdvanceIdleLinkGuardianLab(b *testing.B) {
	w := world.New(1)
	d := NewDataplane(w)
	tr, err := physics.TransceiverByName("100GBASE-SR4")
	if err != nil {
		b.Fatal(err)
	}
	fec, err := physics.FECByName("rs528")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 12 {
		tx := newSDSwitch(d, fmt.Sprintf("lgs%d", i), lg.ProgramSender)
		rx := newSDSwitch(d, fmt.Sprintf("lgr%d", i), lg.ProgramReceiver)
		for p := range 2 {
			f := w.NewFibre(fmt.Sprintf("f%d-%d", i, p), tr, fec, 1, 1, nil)
			r := w.NewFibre(fmt.Sprintf("r%d-%d", i, p), tr, fec, 1, 1, nil)
			d.Connect(f.Name, tx, 128+8*p, rx, 128+8*p, f, 0)
			d.Connect(r.Name, rx, 128+8*p, tx, 128+8*p, r, 0)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if err := d.advance(time.Duration(i+1) * time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
