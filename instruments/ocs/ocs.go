// Package ocs drives optical circuit switches. One interface, CircuitSwitch,
// covers both kinds a lab has:
//
//   - a microsecond switch that runs schedules by itself (Mordia-style,
//     driver "mordia-rest", over the REST API published in openapi.yaml):
//     it also implements Scheduler;
//   - a millisecond switch that holds one cross-connect map at a time
//     (Polatis-style, driver "polatis-scpi", SCPI over TCP 5025 or serial).
//
// Ports count from 1 on each side: a Circuit joins input In to output Out,
// whatever numbering the switch itself uses (a Polatis numbers its egress
// ports N+1..2N; the driver translates). Drivers check every configuration
// and schedule before anything is sent, and Dark is the safe state recipes
// restore on exit or abort.
package ocs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"testbed/internal/sched"
	"testbed/transport"
)

// CircuitSwitch is one optical circuit switch.
type CircuitSwitch interface {
	Identity(ctx context.Context) (transport.Identity, error)
	// Ports is how many inputs and outputs the switch has.
	Ports() Ports
	// Capabilities lists what the driver can do besides holding one
	// configuration: CapSchedule, CapNightLog, CapPortStatus.
	Capabilities() []string
	// SetConfiguration sets the exact cross-connect map: afterwards these
	// circuits, and only these, are up. It returns once the switch reports
	// them established. An empty configuration is the same as Dark.
	SetConfiguration(ctx context.Context, c Configuration) error
	// Configuration reads the circuits the switch holds now.
	Configuration(ctx context.Context) (Configuration, error)
	// PortStatus reads the state of every port, inputs then outputs.
	PortStatus(ctx context.Context) ([]PortStatus, error)
	// Dark stops any running schedule and disconnects every circuit: the
	// safe state.
	Dark(ctx context.Context) error
	Close() error
}

// Scheduler is implemented by switches that run a schedule of
// configurations on their own clock (the microsecond switch). Times are
// on the switch's clock: the time since its own epoch.
type Scheduler interface {
	// Constraints are the limits the switch announced when it was opened;
	// schedules are checked against them before anything is sent.
	Constraints() Constraints
	// LoadSchedule uploads a schedule to run on the next StartSchedule.
	// It fails if a schedule is running (use ReplaceSchedule).
	LoadSchedule(ctx context.Context, s sched.Schedule) error
	// StartSchedule starts the loaded schedule and returns when, on the
	// switch's clock, its first period begins.
	StartSchedule(ctx context.Context, at StartAt) (time.Duration, error)
	// ReplaceSchedule hands the running schedule's successor to the
	// switch; it takes over at the next period boundary (at.NextPeriod),
	// or at the first boundary at or after at.At when that is later,
	// which is returned.
	ReplaceSchedule(ctx context.Context, s sched.Schedule, at StartAt) (time.Duration, error)
	// StopSchedule stops the running schedule at once; every circuit goes dark.
	StopSchedule(ctx context.Context) error
	ScheduleStatus(ctx context.Context) (ScheduleStatus, error)
	// Nights reads the switch's record of reconfigurations, from sequence
	// number since on (0: the oldest it still holds).
	Nights(ctx context.Context, since uint64) (NightLog, error)
	// Clock reads the switch's clock.
	Clock(ctx context.Context) (time.Duration, error)
}

// Capabilities a driver may declare.
const (
	CapSchedule   = "schedule"    // implements Scheduler
	CapNightLog   = "night-log"   // records every reconfiguration (Scheduler.Nights)
	CapPortStatus = "port-status" // PortStatus reports real port states
)

// ErrUnsupported is returned (wrapped) for an operation the switch cannot do.
var ErrUnsupported = errors.New("not supported by this switch")

// AsScheduler returns the switch's Scheduler, or an error saying that this
// switch holds one configuration at a time.
func AsScheduler(cs CircuitSwitch) (Scheduler, error) {
	if s, ok := cs.(Scheduler); ok {
		return s, nil
	}
	return nil, fmt.Errorf("%T runs no schedules (a millisecond switch: set one configuration at a time): %w", cs, ErrUnsupported)
}

// Ports is the size of a switch.
type Ports struct {
	Inputs  int
	Outputs int
}

func (p Ports) String() string { return fmt.Sprintf("%dx%d", p.Inputs, p.Outputs) }

// Circuit joins an input to an output.
type Circuit struct {
	In  int `json:"in"`
	Out int `json:"out"`
}

// Configuration is a set of circuits: a partial permutation of inputs to
// outputs. Inputs that are not listed are dark.
type Configuration []Circuit

// Sorted returns a copy ordered by input.
func (c Configuration) Sorted() Configuration {
	out := append(Configuration(nil), c...)
	sort.Slice(out, func(i, j int) bool { return out[i].In < out[j].In })
	return out
}

// Equal reports whether two configurations hold the same circuits.
func (c Configuration) Equal(o Configuration) bool {
	if len(c) != len(o) {
		return false
	}
	a, b := c.Sorted(), o.Sorted()
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Output returns the output input in feeds, or 0 if it is dark.
func (c Configuration) Output(in int) int {
	for _, x := range c {
		if x.In == in {
			return x.Out
		}
	}
	return 0
}

func (c Configuration) String() string {
	if len(c) == 0 {
		return "dark"
	}
	var parts []string
	for _, x := range c.Sorted() {
		parts = append(parts, fmt.Sprintf("%d->%d", x.In, x.Out))
	}
	return strings.Join(parts, " ")
}

// Problems lists what is wrong with c on a switch of size p: ports out of
// range, an input or an output used twice. Empty means valid.
func (c Configuration) Problems(p Ports) []string {
	var out []string
	byIn, byOut := map[int]int{}, map[int]int{}
	for _, x := range c {
		switch {
		case x.In < 1 || x.In > p.Inputs:
			out = append(out, fmt.Sprintf("input %d does not exist (inputs 1..%d)", x.In, p.Inputs))
		case x.Out < 1 || x.Out > p.Outputs:
			out = append(out, fmt.Sprintf("output %d does not exist (outputs 1..%d)", x.Out, p.Outputs))
		}
		if prev, dup := byIn[x.In]; dup {
			out = append(out, fmt.Sprintf("input %d is used twice (to outputs %d and %d)", x.In, prev, x.Out))
		} else {
			byIn[x.In] = x.Out
		}
		if prev, dup := byOut[x.Out]; dup {
			out = append(out, fmt.Sprintf("output %d is used twice (by inputs %d and %d)", x.Out, prev, x.In))
		} else {
			byOut[x.Out] = x.In
		}
	}
	return out
}

// Shift is the configuration joining input i to output ((i-1+k) mod n)+1
// for i in 1..n: the k-th configuration of a round-robin schedule.
func Shift(n, k int) Configuration {
	out := make(Configuration, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, Circuit{In: i, Out: ((i-1+k)%n+n)%n + 1})
	}
	return out
}

// Side is which side of the switch a port is on.
type Side string

// Sides.
const (
	Input  Side = "in"
	Output Side = "out"
)

// Port states.
const (
	PortEnabled  = "enabled"
	PortDisabled = "disabled"
	PortFailed   = "failed"
)

// PortStatus is the state of one port.
type PortStatus struct {
	Side  Side
	Port  int    // counted from 1 on its side
	State string // PortEnabled, PortDisabled, PortFailed
	Peer  int    // the port on the other side it is connected to; 0 if none
}

// ScheduleStatus is what a scheduling switch is doing.
type ScheduleStatus struct {
	// State is "idle" (nothing loaded), "loaded", "armed" (started, first
	// period not begun yet) or "running".
	State string
	// Start is when the run began (or will begin), on the switch's clock.
	Start time.Duration
	// Period and Slot are the period (from 0) and slot (index into
	// sched.Schedule.Slots) under way.
	Period int64
	Slot   int
	// ReplaceAt is when a replacement takes over; 0 if none is pending.
	ReplaceAt time.Duration
	// Now is the switch's clock when it answered.
	Now time.Duration
}

// Schedule states.
const (
	StateIdle    = "idle"
	StateLoaded  = "loaded"
	StateArmed   = "armed"
	StateRunning = "running"
)

// StartAt says when a schedule starts: at a time on the switch's clock, or
// at the next boundary of the switch's period grid (multiples of the
// schedule's period since the switch's epoch).
type StartAt struct {
	At         time.Duration
	NextPeriod bool
}

// Night is one reconfiguration as the switch recorded it: no circuit
// carried light from Start to End.
type Night struct {
	Seq    uint64
	Period int64 // -1 for a configuration set outside a schedule
	Slot   int   // index into the schedule's slots; -1 outside a schedule
	Start  time.Duration
	End    time.Duration
}

// Gap is how long the night lasted.
func (n Night) Gap() time.Duration { return n.End - n.Start }

// NightLog is a page of the switch's reconfiguration record.
type NightLog struct {
	Nights []Night
	// Next is the sequence number to ask for next time.
	Next uint64
	// Missed counts nights between the one asked for and the oldest the
	// switch still held (its record is a ring).
	Missed uint64
	Now    time.Duration
}

// Options configure a driver when it is opened.
type Options struct {
	// Name is the device's inventory name; errors begin with it.
	Name string
	// Timeout bounds each exchange that has no tighter context deadline.
	Timeout time.Duration
	// Transcript records the exchange; nil records nothing.
	Transcript *transport.Transcript
	// InsecureTLS skips certificate checks on https (REST switches).
	InsecureTLS bool
	// MaxReply bounds a REST switch's reply body (0: DefaultMaxReply).
	MaxReply int
}

// DefaultMaxReply bounds a REST circuit switch's reply: its largest is a
// schedule, a permutation of its ports in each slot (a few bytes a port),
// kilobytes for the slots a period holds; 64 MiB is a guard against a
// body that is not a reply, not its size.
const DefaultMaxReply = 64 << 20

// prefix is how a driver's errors begin: "ocs1 (mordia-rest http://...)".
func (o Options) prefix(driver, addr string) string {
	if o.Name == "" {
		return driver + " " + addr
	}
	return fmt.Sprintf("%s (%s %s)", o.Name, driver, addr)
}
