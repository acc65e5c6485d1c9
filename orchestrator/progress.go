package orchestrator

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"testbed/results"
)

// ProgressDisplay shows a run as it goes, from its events: what is
// running, how far the plan is, and when it should end. Measurements,
// skips, errors and cleanup are printed as lines. On a terminal a status
// line under them is redrawn in place every second (step, percentage,
// elapsed, ETA); elsewhere (CI logs, pipes) nothing is redrawn and a plain
// progress line is printed every PlainEvery instead, so a long step still
// shows that the run is alive.
type ProgressDisplay struct {
	// Prefix goes in front of the status and progress lines (e.g. the
	// suite entry running).
	Prefix string
	// PlainEvery is how often a progress line is printed when not on a
	// terminal (default 15 s).
	PlainEvery time.Duration
	// Width is the terminal's width the status line is cut to (default:
	// asked of the terminal, else 100).
	Width int
	// Now is the clock (tests).
	Now func() time.Time

	mu         sync.Mutex
	out        io.Writer
	live       bool
	index      string // "[  12/150]" of the step running
	cur, total int    // the step running (1-based) and the plan's steps
	done       int    // steps done or skipped
	step       string
	action     string
	running    bool      // the step is running (not ended, skipped or failed)
	first      time.Time // the first step's start
	stepStart  time.Time
	stepTook   time.Duration // how long the last step that ended took
	lastPlain  time.Time
	shown      bool // a status line is on the screen
	ticker     *time.Ticker
	stop       chan struct{}
	closed     bool
	meas       int // measurements of the step running
	// The plan's estimates in seconds: the whole run's, the running
	// step's, and that step's with every later one's (0: none given).
	estTotal, estCur, estLeft float64
	// Skips with one reason in a row are printed as one line.
	skipN              int
	skipMsg            string
	skipFirst, skipTo  int
	skipStep0, skipEnd string
}

// NewProgressDisplay writes to w; live draws a status line in place and
// suits a terminal only (see IsTerminal).
func NewProgressDisplay(w io.Writer, live bool) *ProgressDisplay {
	return &ProgressDisplay{out: w, live: live}
}

// ProgressFor returns a display for w, live when w is a terminal (and
// TERM is not "dumb").
func ProgressFor(w io.Writer) *ProgressDisplay {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" || !IsTerminal(f.Fd()) {
		return NewProgressDisplay(w, false)
	}
	p := NewProgressDisplay(w, true)
	p.Width = TerminalWidth(f.Fd())
	return p
}

func (p *ProgressDisplay) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Observe takes one event of the run (Engine.Observe).
func (p *ProgressDisplay) Observe(e results.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Type {
	case "run.start", "bind", "lanes":
		p.line(e.Message)
	case "device.open":
		p.line(fmt.Sprintf("  %s: %s", e.Device, e.Message))
	case "step.start":
		i, _ := intField(e.Fields, "index")
		n, _ := intField(e.Fields, "of")
		p.index = fmt.Sprintf("[%4v/%v]", e.Fields["index"], e.Fields["of"])
		p.cur, p.total, p.step, p.action, p.running = i, n, e.Step, e.Message, true
		// The plan's estimates: what this step and the ones after it
		// should take; the estimates of the steps done so far, to scale.
		est, _ := floatField(e.Fields, "estimate_s")
		left, hasLeft := floatField(e.Fields, "estimate_left_s")
		if hasLeft {
			if p.estTotal == 0 {
				p.estTotal = left
			}
			p.estCur, p.estLeft = est, left
		}
		p.meas = 0
		p.stepStart = p.now()
		if p.first.IsZero() {
			p.first, p.lastPlain = p.stepStart, p.stepStart
			p.startTicker()
		}
		p.status()
	case "step.end":
		p.stepDone(e)
		p.status()
	case "measurement":
		// A step that measures several points (a refinement) numbers
		// them, so the counter moves.
		p.meas++
		idx := p.index
		if p.meas > 1 {
			idx = fmt.Sprintf("%s #%d", strings.TrimSuffix(p.index, "]"), p.meas) + "]"
		}
		p.line(fmt.Sprintf("%s %s", idx, e.Message))
	case "step.skip":
		p.stepDone(e)
		if p.skipN > 0 && e.Message == p.skipMsg {
			p.skipN, p.skipTo, p.skipEnd = p.skipN+1, p.cur, e.Step
			return
		}
		p.flushSkips()
		p.skipN, p.skipMsg, p.skipFirst, p.skipTo, p.skipStep0, p.skipEnd = 1, e.Message, p.cur, p.cur, e.Step, e.Step
	case "step.error":
		p.running = false
		p.line(fmt.Sprintf("%s %s: ERROR: %s", p.index, e.Step, e.Message))
	case "cleanup":
		p.line("cleanup: " + e.Message)
	case "cleanup.error":
		p.line(fmt.Sprintf("cleanup FAILED: %s: %s", e.Device, e.Message))
	case "run.end":
		p.stopTicker()
		// The status alone: why a run failed is said once, in the block
		// that closes the run's output.
		status, _, _ := strings.Cut(e.Message, " ")
		p.line("run " + status)
	}
}

// Close stops redrawing and clears the status line; call it once the run
// returned (a run that ends normally does this itself).
func (p *ProgressDisplay) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushSkips()
	p.stopTicker()
	p.clear()
}

// flushSkips prints the skips held back: one line for a run of steps
// skipped for one reason.
func (p *ProgressDisplay) flushSkips() {
	switch n := p.skipN; {
	case n == 1:
		p.emit(fmt.Sprintf("[%4d/%v] %s: skipped: %s", p.skipFirst, p.total, p.skipStep0, p.skipMsg))
	case n > 1:
		p.emit(fmt.Sprintf("[%4d-%d/%v] %d steps skipped (%s .. %s): %s", p.skipFirst, p.skipTo, p.total, n, p.skipStep0, p.skipEnd, p.skipMsg))
	}
	p.skipN = 0
}

func (p *ProgressDisplay) stepDone(e results.Event) {
	if i, ok := intField(e.Fields, "index"); ok {
		p.done = i
	}
	if p.running {
		p.stepTook = p.now().Sub(p.stepStart)
	}
	p.running = false
}

// line prints a line above the status line.
func (p *ProgressDisplay) line(s string) {
	p.flushSkips()
	p.emit(s)
}

func (p *ProgressDisplay) emit(s string) {
	p.clear()
	fmt.Fprintln(p.out, s)
	p.status()
}

func (p *ProgressDisplay) clear() {
	if p.shown {
		io.WriteString(p.out, "\r\x1b[K")
		p.shown = false
	}
}

// status redraws the status line (terminal), or prints a progress line
// when one is due (elsewhere).
func (p *ProgressDisplay) status() {
	if p.first.IsZero() || p.closed {
		return
	}
	now := p.now()
	if !p.live {
		every := p.PlainEvery
		if every <= 0 {
			every = 15 * time.Second
		}
		if now.Sub(p.lastPlain) >= every {
			p.lastPlain = now
			fmt.Fprintln(p.out, p.describe(now, false))
		}
		return
	}
	s := p.describe(now, true)
	w := p.Width
	if w <= 0 {
		w = 100
	}
	if utf8.RuneCountInString(s) >= w {
		r := []rune(s)
		s = string(r[:w-2]) + "…"
	}
	io.WriteString(p.out, "\r\x1b[K"+s)
	p.shown = true
}

// describe says where the run is: step, share done, elapsed and ETA.
func (p *ProgressDisplay) describe(now time.Time, short bool) string {
	var b strings.Builder
	if p.Prefix != "" {
		b.WriteString(p.Prefix + " ")
	}
	pct := 0.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	elapsed := now.Sub(p.first)
	eta := "ETA --"
	switch {
	case p.estLeft > 0:
		// From the plan's estimates: what is left of the running step and
		// the later steps' estimates, scaled by how long the steps done
		// took against theirs (a simulated lab runs faster than a real
		// one; a loaded machine slower).
		running := now.Sub(p.stepStart).Seconds()
		if !p.running {
			running = 0
		}
		doneEst := p.estTotal - p.estLeft
		scale := 1.0
		if spent := p.stepStart.Sub(p.first).Seconds(); doneEst > 0 && spent > 0 {
			scale = spent / doneEst
		}
		leftS := math.Max(p.estCur*scale-running, 0) + (p.estLeft-p.estCur)*scale
		if !p.running {
			leftS = (p.estLeft - p.estCur) * scale
		}
		eta = "ETA " + FormatDuration(time.Duration(leftS*float64(time.Second)))
	case p.done > 0 && p.total > 0:
		// No estimates: the mean of the steps done, and at least what the
		// running step has already taken for it.
		per := float64(elapsed) / float64(p.done)
		left := per * float64(p.total-p.done)
		if p.running {
			per = float64(p.stepStart.Sub(p.first)) / float64(p.done)
			left = math.Max(per-float64(now.Sub(p.stepStart)), 0) + per*float64(p.total-p.done-1)
		}
		eta = "ETA " + FormatDuration(time.Duration(left))
	}
	if short {
		state := FormatDuration(now.Sub(p.stepStart))
		if !p.running {
			state = "done in " + FormatDuration(p.stepTook)
		}
		fmt.Fprintf(&b, "%s %3.0f%% %s: %s (%s) | %s elapsed, %s", p.index, pct, p.step, p.action, state, FormatDuration(elapsed), eta)
		return b.String()
	}
	step := fmt.Sprintf("step %d %s running for %s", p.cur, p.step, FormatDuration(now.Sub(p.stepStart)))
	if !p.running {
		step = fmt.Sprintf("step %d %s done in %s", p.cur, p.step, FormatDuration(p.stepTook))
	}
	fmt.Fprintf(&b, "progress: %d/%d steps done (%.0f%%), %s, %s elapsed, %s",
		p.done, p.total, pct, step, FormatDuration(elapsed), eta)
	return b.String()
}

func (p *ProgressDisplay) startTicker() {
	if p.ticker != nil || p.closed {
		return
	}
	every := time.Second
	if !p.live {
		every = p.PlainEvery
		if every <= 0 {
			every = 15 * time.Second
		}
		every /= 3 // a line is due at most a third late
	}
	p.ticker, p.stop = time.NewTicker(every), make(chan struct{})
	go func(t *time.Ticker, stop chan struct{}) {
		for {
			select {
			case <-t.C:
				p.mu.Lock()
				if !p.closed {
					p.status()
				}
				p.mu.Unlock()
			case <-stop:
				return
			}
		}
	}(p.ticker, p.stop)
}

func (p *ProgressDisplay) stopTicker() {
	if p.ticker != nil {
		p.ticker.Stop()
		close(p.stop)
		p.ticker = nil
	}
	p.clear()
	p.closed = true
}

// FormatDuration writes a duration the way a person reads a clock: 45s,
// 3m07s, 1h02m.
func FormatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
}

func floatField(f map[string]any, k string) (float64, bool) {
	switch v := f[k].(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	}
	return 0, false
}
