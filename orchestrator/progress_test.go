package orchestrator

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"testbed/results"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a bytes.Buffer the display's ticker may write to while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func stepEvents(i, n int, name string) (start, end results.Event) {
	f := map[string]any{"index": i, "of": n}
	return results.Event{Type: "step.start", Step: name, Message: "measure", Fields: f},
		results.Event{Type: "step.end", Step: name, Fields: f}
}

func TestProgressPlainLinesForLogs(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var out syncBuffer
	p := NewProgressDisplay(&out, false)
	p.Now, p.PlainEvery, p.Prefix = clk.now, 10*time.Second, "nightly/l10g"
	defer p.Close()

	p.Observe(results.Event{Type: "run.start", Message: "attenuation-sweep v1.0.0, 4 steps on 2 devices"})
	p.Observe(results.Event{Type: "device.open", Device: "voa1", Message: "Keysight N7764A"})
	for i := 1; i <= 2; i++ {
		s, e := stepEvents(i, 4, fmt.Sprintf("point %d", i))
		p.Observe(s)
		p.Observe(results.Event{Type: "measurement", Message: fmt.Sprintf("l10g %d.00 dB: loss 0", i)})
		clk.add(6 * time.Second)
		p.Observe(e)
	}
	// Two steps in 12 s: a progress line is due (every 10 s), and the two
	// steps left should take 12 s more.
	s, _ := stepEvents(3, 4, "point 3")
	p.Observe(s)
	p.Observe(results.Event{Type: "step.skip", Step: "point 3", Message: "link dark", Fields: map[string]any{"index": 3, "of": 4}})
	p.Observe(results.Event{Type: "run.end", Message: "ok "})
	got := out.String()
	for _, want := range []string{
		"attenuation-sweep v1.0.0, 4 steps on 2 devices\n",
		"  voa1: Keysight N7764A\n",
		"[   1/4] l10g 1.00 dB: loss 0\n",
		"[   2/4] l10g 2.00 dB: loss 0\n",
		"nightly/l10g progress: 2/4 steps done (50%), step 2 point 2 done in 6s, 12s elapsed, ETA 12s\n",
		"[   3/4] point 3: skipped: link dark\n",
		"run ok\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\r") || strings.Contains(got, "\x1b[") {
		t.Errorf("plain output redraws like a terminal:\n%q", got)
	}
	if n := strings.Count(got, "progress:"); n != 1 {
		t.Errorf("%d progress lines, want 1 (one due every 10 s):\n%s", n, got)
	}
}

// A step that runs long without events still gets progress lines.
func TestProgressPlainLinesDuringALongStep(t *testing.T) {
	var out syncBuffer
	p := NewProgressDisplay(&out, false)
	p.PlainEvery = 60 * time.Millisecond
	s, e := stepEvents(1, 2, "calibrate")
	p.Observe(s)
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "progress:") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no progress lines while the step ran:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Observe(e)
	p.Observe(results.Event{Type: "run.end", Message: "ok "})
	p.Close()
	after := out.String()
	time.Sleep(200 * time.Millisecond)
	if out.String() != after {
		t.Errorf("the display wrote after the run ended:\n%s", strings.TrimPrefix(out.String(), after))
	}
	if !regexp.MustCompile(`progress: 0/2 steps done \(0%\), step 1 calibrate running for \d+s, \d+s elapsed, ETA --`).MatchString(after) {
		t.Errorf("progress line:\n%s", after)
	}
}

func TestProgressLiveStatusLine(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var out syncBuffer
	p := NewProgressDisplay(&out, true)
	p.Now, p.Width = clk.now, 200
	s1, e1 := stepEvents(1, 3, "l25g @ 6.00 dB")
	p.Observe(s1)
	clk.add(90 * time.Second)
	p.Observe(e1)
	s2, _ := stepEvents(2, 3, "l25g @ 7.00 dB")
	p.Observe(s2)
	clk.add(5 * time.Second)
	p.Observe(results.Event{Type: "measurement", Message: "l25g 7.00 dB: loss 1e-06"})
	got := out.String()
	// The status line is drawn in place, and cleared before a line. Five
	// seconds into step 2 of steps of 90 s, 85 s of it and step 3's 90 s
	// are left.
	want := "\r\x1b[K[   1/3]  33% l25g @ 6.00 dB: measure (done in 1m30s) | 1m30s elapsed, ETA 3m00s" +
		"\r\x1b[K[   2/3]  33% l25g @ 7.00 dB: measure (0s) | 1m30s elapsed, ETA 3m00s" +
		"\r\x1b[K[   2/3] l25g 7.00 dB: loss 1e-06\n" +
		"\r\x1b[K[   2/3]  33% l25g @ 7.00 dB: measure (5s) | 1m35s elapsed, ETA 2m55s"
	if !strings.Contains(got, want) {
		t.Errorf("live output:\n%q\nwant it to contain\n%q", got, want)
	}
	p.Close()
	if !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Errorf("Close leaves the status line on the screen: %q", out.String())
	}

	// A narrow terminal: the status line is cut to fit, never wrapped.
	var narrow syncBuffer
	q := NewProgressDisplay(&narrow, true)
	q.Now, q.Width = clk.now, 30
	q.Observe(s1)
	q.Close()
	for _, l := range strings.Split(narrow.String(), "\r\x1b[K") {
		if n := len([]rune(l)); n >= 30 {
			t.Errorf("status line of %d runes on a 30-column terminal: %q", n, l)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                          "0s",
		400 * time.Millisecond:                "0s",
		45 * time.Second:                      "45s",
		3*time.Minute + 7*time.Second:         "3m07s",
		62 * time.Minute:                      "1h02m",
		26*time.Hour + 59*time.Second:         "26h00m",
		59*time.Second + 600*time.Millisecond: "1m00s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestProgressForAFileThatIsNotATerminal(t *testing.T) {
	var b bytes.Buffer
	if ProgressFor(&b).live {
		t.Errorf("a buffer got a live display")
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ProgressFor(f).live || IsTerminal(f.Fd()) {
		t.Errorf("a regular file is taken for a terminal")
	}
}

// The ETA comes from the plan's estimates, scaled by how the steps done
// kept to theirs, and counts what the running step has already taken;
// without estimates a step running past the mean does not make the ETA
// shrink below what the steps after it need.
func TestProgressETAFromEstimates(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	p := NewProgressDisplay(&syncBuffer{}, false)
	p.Now = clk.now
	defer p.Close()
	est := func(i int, cur, left float64) results.Event {
		return results.Event{Type: "step.start", Step: fmt.Sprintf("s%d", i), Message: "send",
			Fields: map[string]any{"index": i, "of": 3, "estimate_s": cur, "estimate_left_s": left}}
	}
	// Estimates 10 s, 20 s, 10 s; the first took 5 s (half its estimate).
	p.Observe(est(1, 10, 40))
	clk.add(5 * time.Second)
	_, end := stepEvents(1, 3, "s1")
	p.Observe(end)
	p.Observe(est(2, 20, 30))
	clk.add(4 * time.Second)
	// Left: 20*0.5-4 of the running step, 10*0.5 of the last.
	if got := p.describe(clk.now(), false); !strings.Contains(got, "ETA 11s") {
		t.Errorf("with estimates: %s", got)
	}

	q := NewProgressDisplay(&syncBuffer{}, false)
	q.Now = clk.now
	defer q.Close()
	for i := 1; i <= 2; i++ {
		s, e := stepEvents(i, 4, fmt.Sprintf("p%d", i))
		q.Observe(s)
		clk.add(10 * time.Second)
		q.Observe(e)
	}
	s, _ := stepEvents(3, 4, "p3")
	q.Observe(s)
	clk.add(95 * time.Second)
	// Two steps of 10 s done; the third has run 95 s: at least the last
	// step's 10 s are left, not a share of a mean the long step inflates.
	if got := q.describe(clk.now(), false); !strings.Contains(got, "ETA 10s") {
		t.Errorf("without estimates: %s", got)
	}
}
