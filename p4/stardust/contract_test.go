package stardust

import (
	"math"
	"testing"
	"time"
)

// §4.1's worked example: a 10 Tb/s adapter at 1 GHz with a credit every
// two clocks. The paper prints 2000 B; the arithmetic, 10e12 b/s over
// 5e8 credits/s, is 20,000 bits: 2500 B.
func TestMinCreditBytes(t *testing.T) {
	if got := MinCreditBytes(10e12, 1e9, 2); math.Abs(got-2500) > 1e-9 {
		t.Errorf("got %g B, want 2500", got)
	}
	if got := MinCreditBytes(10e12, 1e9, 4); math.Abs(got-5000) > 1e-9 {
		t.Errorf("a credit every four clocks: got %g B, want 5000", got)
	}
}

func TestCreditPeriod(t *testing.T) {
	// 4 KB at 10 Gb/s x 1.03 (§6.3): 4096*8/10.3e9 s = 3181.4 ns.
	p, err := CreditPeriod(10e9, 0.03, 4096)
	if err != nil || p != 3181*time.Nanosecond {
		t.Errorf("got %v, %v", p, err)
	}
	// A faster credit rate is a shorter period, proportionally.
	q, _ := CreditPeriod(10e9, 0, 4096)
	if r := float64(q) / float64(p); math.Abs(r-1.03) > 1e-3 {
		t.Errorf("period ratio %g, want 1.03", r)
	}
	if _, err := CreditPeriod(0, 0, 1); err == nil {
		t.Error("zero port rate accepted")
	}
}

func TestCellBytes(t *testing.T) {
	// A 256 B frame bound with a 32 B datapath (§6.1.1's NetFPGA width):
	// 256-14-14 = 228 B, 7 words: 224 B.
	if n, err := CellBytes(256, 32); err != nil || n != 224 {
		t.Errorf("got %d, %v", n, err)
	}
	if _, err := CellBytes(40, 32); err == nil {
		t.Error("a 40 B frame bound accepted")
	}
}

// Appendix E with Table 4: 7 messages, 10 µs apart, 0.04% of a link, and
// 652 µs to recover with the link delays; §5.9's 630 µs without them.
func TestReachability(t *testing.T) {
	r := PaperReach()
	if r.Period() != 10*time.Microsecond || r.Messages() != 7 {
		t.Errorf("period %v, messages %d", r.Period(), r.Messages())
	}
	if got := r.Overhead(); math.Abs(got-3.84e-4) > 1e-9 {
		t.Errorf("overhead %g", got)
	}
	if got := r.Recovery(); got != 652050*time.Nanosecond {
		t.Errorf("recovery %v", got)
	}
	r.Prop = nil
	if got := r.Recovery(); got != 630*time.Microsecond {
		t.Errorf("recovery without propagation %v", got)
	}
}

func TestCellRoundTrip(t *testing.T) {
	c := Cell{Kind: KindData, Flags: FlagFCI | FlagLast, DstFA: 7, DstPort: 300, SrcFA: 2, Seq: 1 << 31, PayloadLength: 224, Tstamp: 0xdeadbeef}
	b := c.Marshal()
	if len(b) != CellHeaderBytes || b[0] != KindData || b[1] != 3 {
		t.Fatalf("% x", b)
	}
	got, err := ParseCell(b)
	if err != nil || got != c {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := ParseCell(b[:5]); err == nil {
		t.Error("short header parsed")
	}
}

func TestGeneratorBufferRoundTrip(t *testing.T) {
	src := [6]byte{0x02, 0, 0, 0, 0, 7}
	c := Cell{Kind: KindCredit, DstPort: 3, Seq: 12, PayloadLength: 16}
	b := GeneratorBuffer(src, c)
	if len(b) != GeneratorBufferBytes {
		t.Fatalf("%d bytes", len(b))
	}
	gs, gc, err := ParseGeneratorBuffer(b)
	if err != nil || gs != src || gc != c {
		t.Errorf("got %v %+v %v", gs, gc, err)
	}
	b[6] = 0x08
	if _, _, err := ParseGeneratorBuffer(b); err == nil {
		t.Error("a buffer that is not a cell parsed")
	}
	if _, _, err := ParseGeneratorBuffer(b[:10]); err == nil {
		t.Error("a short buffer parsed")
	}
}

// Tofino counts queue depth in 80 B buffer cells: a 256 B frame takes 4.
func TestFCIThreshold(t *testing.T) {
	if got := FCIThreshold(32, 256); got != 128 {
		t.Errorf("32 frames of 256 B: %d buffer cells, want 128", got)
	}
	if got := FCIThreshold(10, 80); got != 10 {
		t.Errorf("10 frames of 80 B: %d buffer cells, want 10", got)
	}
}
