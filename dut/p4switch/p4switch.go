// Package p4switch is the switch kind: a programmable (P4) switch as
// recipes and the P4 programs' control planes use it, in small interfaces
// a driver implements (the Tofino driver over SSH and its bfrt_python
// agent, dut/tofino; the BF Runtime gRPC driver). A recipe asks the run for
// the interface it needs (RunContext.Switch for the Core, SwitchPorts,
// SwitchCounters, ...) and never names a driver's type; a driver that
// lacks one says so when the run asks for it.
//
// Ports are device ports (Tofino's dev_port); speeds are Gb/s and FEC
// modes the inventory's names (none, fc, rs528, rs544).
package p4switch

import (
	"context"
	"errors"
	"time"
)

// Kind is the inventory's kind for a switch.
const Kind = "switch"

// Core is table and register access to the switch's P4 program: what every
// program's control plane (p4/linkguardian, p4/stardust, p4/ecmp,
// p4/timestamp) is written against. Names are the program's ("Control.table",
// "Control.register").
type Core interface {
	// AddEntry adds an entry to a table with an action.
	AddEntry(ctx context.Context, table string, e Entry) error
	// ModifyEntry gives the entry with e.Key the action and data of e, in
	// place; a key with no entry is an error.
	ModifyEntry(ctx context.Context, table string, e Entry) error
	// DeleteEntry deletes the entry with key (ErrNotFound if none).
	DeleteEntry(ctx context.Context, table string, key map[string]int64) error
	// ClearTable deletes every entry of a table.
	ClearTable(ctx context.Context, table string) error
	// Entries reads every entry of a table.
	Entries(ctx context.Context, table string) ([]Entry, error)
	// EntriesWhere reads the entries whose key has each field of key at
	// its value; key names at least one field.
	EntriesWhere(ctx context.Context, table string, key map[string]int64) ([]Entry, error)
	// ReadRegister reads one index of a register, one value per pipe.
	ReadRegister(ctx context.Context, name string, index int) ([]int64, error)
	// ReadRegisterRange reads count consecutive indices from index from
	// on, each summed over the pipes.
	ReadRegisterRange(ctx context.Context, name string, from, count int) ([]int64, error)
	// WriteRegister writes one index of a register in every pipe.
	WriteRegister(ctx context.Context, name string, index int, value int64) error
}

// Programs is which P4 program the switch runs, and loading another.
type Programs interface {
	// Program is the program the switch runs ("" when none runs: then
	// nothing a run set in the data plane is left to undo).
	Program(ctx context.Context) (string, error)
	// LoadProgram starts the switch with another program (built and
	// installed on it already); whatever the data plane held is gone.
	LoadProgram(ctx context.Context, program string) error
	// Ready makes the switch answer the Core's and the other interfaces'
	// requests while its program runs (the Tofino driver starts its
	// agent): what a freshly opened driver calls before it undoes a dead
	// run's changes.
	Ready(ctx context.Context) error
}

// Builder compiles a P4 program's sources on the switch and installs it,
// for Programs.LoadProgram to start.
type Builder interface {
	// BuildProgram uploads files (paths relative to the program's
	// directory; main is the file the compiler starts from), compiles and
	// installs program.
	BuildProgram(ctx context.Context, program, main string, files map[string][]byte) (Build, error)
}

// Ports adds, removes and reads the switch's ports.
type Ports interface {
	// AddPort adds and enables a port with a speed and FEC mode,
	// auto-negotiation off.
	AddPort(ctx context.Context, devPort, gbps int, fec string) error
	// DeletePort removes a port (ErrNotFound if it was not added).
	DeletePort(ctx context.Context, devPort int) error
	// PortStatus reads a port's state.
	PortStatus(ctx context.Context, devPort int) (PortStatus, error)
	// WaitPortUp asks until the port reports up or ctx ends.
	WaitPortUp(ctx context.Context, devPort int) error
	// SetPortMode sets an added port's speed and FEC and returns the mode
	// it had, for RestorePortMode.
	SetPortMode(ctx context.Context, devPort, gbps int, fec string) (PortMode, error)
	// RestorePortMode sets back a mode SetPortMode returned.
	RestorePortMode(ctx context.Context, devPort int, m PortMode) error
	// SetCutThrough turns cut-through towards a port on or off and returns
	// the setting it had.
	SetCutThrough(ctx context.Context, devPort int, enable bool) (bool, error)
}

// PortCounters reads the ports' counters.
type PortCounters interface {
	// PortCounters reads every counter of a port, by the device's names.
	PortCounters(ctx context.Context, devPort int) (Counters, error)
	// ClearPortCounters zeroes a port's counters.
	ClearPortCounters(ctx context.Context, devPort int) error
	// PortFrames reads every PortFrames field but TxSized.
	PortFrames(ctx context.Context, devPort int) (PortFrames, error)
	// PortFramesOf reads the fields q asks for; the others are 0.
	PortFramesOf(ctx context.Context, devPort int, q FrameQuery) (PortFrames, error)
	// FECCounters reads an added port's FEC counters.
	FECCounters(ctx context.Context, devPort int) (FECCounters, error)
}

// Queues reads the traffic manager's egress queues and sets their
// scheduling priority.
type Queues interface {
	// Queue reads egress queue qid (0..7) of a port.
	Queue(ctx context.Context, devPort, qid int, clearWatermark bool) (QueueUsage, error)
	// SetQueuePriority sets a queue's strict priority (0 lowest) and
	// returns the one it had.
	SetQueuePriority(ctx context.Context, devPort, qid, priority int) (prev int, err error)
	// QueuePriority reads a queue's priority.
	QueuePriority(ctx context.Context, devPort, qid int) (int, error)
}

// PacketGenerator is the switch's own packet generator.
type PacketGenerator interface {
	// StartPktgen configures and enables a generator application.
	StartPktgen(ctx context.Context, p Pktgen) error
	// StopPktgen disables an application (ErrNotFound if it is not set up).
	StopPktgen(ctx context.Context, appID int) error
	// PktgenStatus reads an application's progress.
	PktgenStatus(ctx context.Context, appID int) (PktgenStatus, error)
}

// Clock is the switch's own clock, the time base of its counters and
// timestamps.
type Clock interface {
	// Clock reads the switch's clock.
	Clock(ctx context.Context) (time.Duration, error)
	// WaitClock answers once the switch's clock has reached t: the way to
	// sample at fixed intervals of the device's own time.
	WaitClock(ctx context.Context, t time.Duration) (time.Duration, error)
	// TxTimestamp reads the MAC's transmit timestamp of the last frame on
	// a port whose program asked for one.
	TxTimestamp(ctx context.Context, devPort int) (TxStamp, error)
}

// Optics reads a front-panel port's transceiver diagnostics.
type Optics interface {
	Transceiver(ctx context.Context, frontPort int) ([]Lane, error)
}

// ErrNotFound is what a driver's error wraps when the entry, port or
// generator application asked for does not exist: errors.Is(err,
// ErrNotFound). An undo that finds its change gone already is done.
var ErrNotFound = errors.New("not found")

// IsNotFound reports whether err says the thing asked for does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// Capabilities a switch driver may declare in its registration.
const (
	// CapPacketGenerator: the driver implements PacketGenerator.
	CapPacketGenerator = "pktgen"
	// CapClock: the driver implements Clock.
	CapClock = "clock"
	// CapQueues: the driver implements Queues.
	CapQueues = "queues"
	// CapPrograms: the driver implements Programs.
	CapPrograms = "programs"
	// CapBuilder: the driver implements Builder.
	CapBuilder = "builder"
	// CapOptics: the driver implements Optics.
	CapOptics = "optics"
	// CapFEC: the driver reads FEC counters (PortCounters.FECCounters).
	CapFEC = "fec-counters"
)

// Switch is a switch with every interface of the kind: what a recipe that
// sets up a whole program (ports, tables, its generator, reading counters
// on the switch's clock) asks for. A recipe that needs less asks for less.
type Switch interface {
	Core
	Programs
	Ports
	PortCounters
	Queues
	PacketGenerator
	Clock
}
