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
//	slip:<steps>[:N|:always]    a stepper motor's motion loses this many steps
//
// N is how many requests it hits (default 1); always hits every one
// until the device's faults are cleared. A slip counts motions, not
// requests, and only a device with a stepper motor (the DD-100) takes it.
type FaultSpec struct {
	Kind  string        `json:"kind"`            // drop, delay, garbage, error, slip
	Delay time.Duration `json:"delay,omitempty"` // of delay
	Text  string        `json:"text,omitempty"`  // of error
	Steps int           `json:"steps,omitempty"` // of slip
	Count int           `json:"count"`           // Always (-1) for always
}

// maxSlipSteps bounds a slip: more steps than a DD-100's whole range
// (60 dB at 4060/36.5 steps a dB, its manual's figures, is 6,674) stop
// the stepper at the end of its range anyway.
const maxSlipSteps = 100000

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
	case "slip":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > maxSlipSteps {
			return fs, fmt.Errorf("fault %q: slip needs the steps a motion loses, 1 to %d (slip:200[:N|:always])", s, maxSlipSteps)
		}
		fs.Steps = n
	default:
		return fs, fmt.Errorf("fault %q: unknown kind %q (drop, delay:<duration>, garbage, error:<text>, slip:<steps>, each with :N or :always)", s, kind)
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
	case "slip":
		if fs.Steps < 1 || fs.Steps > maxSlipSteps {
			return fmt.Errorf("fault slip: %d steps (1 to %d)", fs.Steps, maxSlipSteps)
		}
	default:
		return fmt.Errorf("unknown fault kind %q (drop, delay, garbage, error, slip)", fs.Kind)
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
	case "slip":
		return "slip:" + strconv.Itoa(fs.Steps) + ":" + n
	}
	return fs.Kind + ":" + n
}

// Inject adds a fault (checked first). A slip is refused for a device
// without a stepper motor, where it would wait for a motion forever.
func (f *Faults) Inject(fs FaultSpec) error {
	if err := fs.validate(); err != nil {
		return err
	}
	switch fs.Kind {
	case "slip":
		f.mu.Lock()
		stepper := f.stepper
		f.mu.Unlock()
		if !stepper {
			return fmt.Errorf("fault %s: the device has no stepper motor to lose steps (an OZ Optics DD-100 has)", fs)
		}
		f.SlipEach(fs.Steps, fs.Count)
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
	for _, n := range f.slips {
		if k := len(out); k > 0 && out[k-1].Kind == "slip" && out[k-1].Steps == n {
			out[k-1].Count++
			continue
		}
		if n > 0 {
			out = append(out, FaultSpec{Kind: "slip", Steps: n, Count: 1})
		}
	}
	if f.slipAlways > 0 {
		out = append(out, FaultSpec{Kind: "slip", Steps: f.slipAlways, Count: Always})
	}
	return out
}
