package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"

	"testbed/results"
)

// readEvents reads the complete lines of a bundle's events.jsonl from
// offset on (a line still being written is left for the next read) and
// returns them with the offset after the last one read.
func readEvents(dir string, offset int64) ([]results.Event, int64, error) {
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var out []results.Event
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer is no event the engine
			// writes: skip it whole, a buffer at a time (memory stays
			// bounded however long it is). A cap on the skip would stop
			// the view at such a line for good, never passing it.
			n := int64(len(line))
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				n += int64(len(line))
			}
			if err != nil {
				return out, offset, nil // the line is not complete yet
			}
			offset += n
			continue
		}
		if err != nil {
			return out, offset, nil // EOF, or a line not yet complete
		}
		offset += int64(len(line))
		var e results.Event
		if json.Unmarshal(bytes.TrimSpace(line), &e) == nil {
			out = append(out, e)
		}
	}
}

// Progress is a run's progress as read from its events.
type Progress struct {
	StepsDone  int    `json:"steps_done"`
	StepsTotal int    `json:"steps_total"`
	Step       string `json:"step"`
	Action     string `json:"action"`
	// Fraction is steps done over steps total (0 to 1).
	Fraction float64 `json:"fraction"`
	// ETA is when the run should end, from the plan's step estimates
	// (null: the recipe gave none).
	ETA     *time.Time `json:"eta"`
	Started time.Time  `json:"started"`
	// Last is the newest events, oldest first.
	Last []results.Event `json:"last_events"`
	// Ended is true once run.end was written.
	Ended bool `json:"ended"`
	// EventsRead is the offset in events.jsonl read so far.
	EventsRead int64 `json:"-"`
}

// lastEvents is how many events the run page shows.
const lastEvents = 12

// follow folds new events into the progress.
func (p *Progress) follow(evs []results.Event) {
	for _, e := range evs {
		switch e.Type {
		case "run.start":
			p.Started = e.Time
		case "step.start":
			p.Step, p.Action = e.Step, e.Message
			if of, ok := num(e.Fields["of"]); ok {
				p.StepsTotal = int(of)
			}
			if left, ok := num(e.Fields["estimate_left_s"]); ok {
				eta := e.Time.Add(time.Duration(left * float64(time.Second)))
				p.ETA = &eta
			}
		case "step.end", "step.skip":
			if i, ok := num(e.Fields["index"]); ok {
				p.StepsDone = int(i)
			}
			if of, ok := num(e.Fields["of"]); ok {
				p.StepsTotal = int(of)
			}
		case "run.end":
			p.Ended = true
		}
		p.Last = append(p.Last, e)
	}
	if len(p.Last) > lastEvents {
		p.Last = append([]results.Event(nil), p.Last[len(p.Last)-lastEvents:]...)
	}
	if p.StepsTotal > 0 {
		p.Fraction = float64(p.StepsDone) / float64(p.StepsTotal)
	}
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

// runProgress reads a bundle's events whole into a Progress.
func runProgress(dir string) (Progress, error) {
	var p Progress
	evs, off, err := readEvents(dir, 0)
	if err != nil {
		return p, err
	}
	p.follow(evs)
	p.EventsRead = off
	if p.Last == nil {
		p.Last = []results.Event{}
	}
	return p, nil
}
