package wire

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FaultSpec is one fault in the form a person writes it (the grammar of
// `testbed lab up --fault`):
//
//	drop[:N|:always]            close the connection instead of answering
//	delay:<duration>[:N|:always] answer late (Go duration: 200ms, 2s)
//	garbage[:N|:always]         answer with bytes the protocol does not allow
//	error:<text>[:N|:always]    raise a device error with this message
//
// N is how many requests it hits (default 1); always hits every one
// until the device's faults are cleared.
type FaultSpec struct {
	Kind  string        `json:"kind"`            // drop, delay, garbage, error
	Delay time.Duration `json:"delay,omitempty"` // of delay
	Text  string        `json:"text,omitempty"`  // of error
	Count int           `json:"count"`           // Always (-1) for always
}

// DeviceErrorCode is the code a fault's device error carries: SCPI's
// generic "Execution error"; an SSH front-end exits with status 1.
const DeviceErrorCode = -200

// ParseFaultSpec reads one fault, e.g. "drop:3", "delay:200ms:always",
// "error:BF_INVALID_ARG".
func ParseFaultSpec(s string) (FaultSpec, error) {
	kind, rest, _ := strings.Cut(s, ":")
	fs := FaultSpec{Kind: kind, Count: 1}
	arg, count := rest, ""
	if kind == "drop" || kind == "garbage" {
		arg, count = "", rest
	} else if i := strings.LastIndex(rest, ":"); i >= 0 {
		arg, count = rest[:i], rest[i+1:]
	}
	if count != "" {
		n, err := parseCount(count)
		switch {
		case err == nil:
			fs.Count = n
		case kind == "error":
			arg = rest // a colon inside the message
		default:
			return fs, fmt.Errorf("fault %q: %w", s, err)
		}
	}
	rest = arg
	switch kind {
	case "drop", "garbage":
		if rest != "" {
			return fs, fmt.Errorf("fault %q: %s takes a count or always, not %q", s, kind, rest)
		}
	case "delay":
		d, err := time.ParseDuration(rest)
		if err != nil || d <= 0 {
			return fs, fmt.Errorf("fault %q: delay needs a positive duration (delay:200ms[:N|:always])", s)
		}
		fs.Delay = d
	case "error":
		if strings.TrimSpace(rest) == "" {
			return fs, fmt.Errorf("fault %q: error needs the device's message (error:<text>[:N|:always])", s)
		}
		fs.Text = rest
	default:
		return fs, fmt.Errorf("fault %q: unknown kind %q (drop, delay:<duration>, garbage, error:<text>, each with :N or :always)", s, kind)
	}
	return fs, fs.validate()
}

func parseCount(s string) (int, error) {
	if s == "always" {
		return Always, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("count %q is neither a number nor always", s)
	}
	if n < 1 {
		return 0, fmt.Errorf("count %d (at least 1, or always)", n)
	}
	return n, nil
}

func (fs FaultSpec) validate() error {
	if fs.Count != Always && fs.Count < 1 {
		return fmt.Errorf("fault %s: count %d (at least 1, or always: -1)", fs.Kind, fs.Count)
	}
	switch fs.Kind {
	case "drop", "garbage":
	case "delay":
		if fs.Delay <= 0 {
			return fmt.Errorf("fault delay: duration %v (must be positive)", fs.Delay)
		}
	case "error":
		if strings.TrimSpace(fs.Text) == "" {
			return fmt.Errorf("fault error: no message")
		}
	default:
		return fmt.Errorf("unknown fault kind %q (drop, delay, garbage, error)", fs.Kind)
	}
	return nil
}

// String writes the spec back in the grammar ParseFaultSpec reads.
func (fs FaultSpec) String() string {
	n := strconv.Itoa(fs.Count)
	if fs.Count == Always {
		n = "always"
	}
	switch fs.Kind {
	case "delay":
		return "delay:" + fs.Delay.String() + ":" + n
	case "error":
		return "error:" + fs.Text + ":" + n
	}
	return fs.Kind + ":" + n
}

// Inject adds a fault (checked first).
func (f *Faults) Inject(fs FaultSpec) error {
	if err := fs.validate(); err != nil {
		return err
	}
	switch fs.Kind {
	case "drop":
		f.DropNext(fs.Count)
	case "garbage":
		f.GarbleNext(fs.Count)
	case "delay":
		f.DelayNext(fs.Count, fs.Delay)
	case "error":
		if fs.Count == Always {
			f.FailAlways(DeviceErrorCode, fs.Text)
			return nil
		}
		for range fs.Count {
			f.FailNext(DeviceErrorCode, fs.Text)
		}
	}
	return nil
}

// Pending lists the faults still to come, in the grammar's terms (a
// stall or a dropped reply, which the grammar has no word for, is not
// listed).
func (f *Faults) Pending() []FaultSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []FaultSpec
	if f.drop != 0 {
		out = append(out, FaultSpec{Kind: "drop", Count: f.drop})
	}
	if f.garble != 0 {
		out = append(out, FaultSpec{Kind: "garbage", Count: f.garble})
	}
	if f.delayN != 0 && f.delay > 0 {
		out = append(out, FaultSpec{Kind: "delay", Delay: f.delay, Count: f.delayN})
	}
	for _, e := range f.failures {
		if n := len(out); n > 0 && out[n-1].Kind == "error" && out[n-1].Text == e.Message && out[n-1].Count != Always {
			out[n-1].Count++
			continue
		}
		out = append(out, FaultSpec{Kind: "error", Text: e.Message, Count: 1})
	}
	if f.failing != nil {
		out = append(out, FaultSpec{Kind: "error", Text: f.failing.Message, Count: Always})
	}
	return out
}
