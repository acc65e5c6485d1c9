package wire

import (
	"sync"
	"time"
)

// Faults makes an emulator misbehave on purpose, for tests and rehearsals.
// Every protocol front-end consults its Faults for each request it serves:
//   - drop: close the connection instead of answering;
//   - drop reply: do what the request asks, then close the connection
//     before answering (the answer lost on its way back);
//   - stall: never answer (the client's deadline must fire);
//   - garble: answer with bytes the protocol does not allow;
//   - delay: answer late;
//   - fail: raise a device error the way the device reports one (SCPI error
//     queue entry, "Error-N" line, HTTP error body);
//   - slip: a stepper motor loses steps on its next motions (SlipNext,
//     SlipEach; a device whose emulator said HasStepper).
//
// The zero value injects nothing. Methods are safe for concurrent use.
type Faults struct {
	mu       sync.Mutex
	drop     int
	dropRe   int
	stall    int
	garble   int
	delay    time.Duration
	delayN   int // replies still to delay; Always: every one
	failures []DeviceError
	failing  *DeviceError // raised by every setting command while set
	// slips are the steps each of the next motions of a stepper loses
	// (slips[0] the next one's), slipAlways the steps every motion loses
	// until Reset; stepper is set by an emulator with a stepper motor,
	// which alone takes a slip.
	slips      []int
	slipAlways int
	stepper    bool
}

// Always, as a count, makes a fault apply to every request until reset.
const Always = -1

// DeviceError is an error the device itself reports.
type DeviceError struct {
	Code    int
	Message string
}

// DropNext makes the next n requests close the connection unanswered.
// (Always: every request).
func (f *Faults) DropNext(n int) { f.mu.Lock(); addCount(&f.drop, n); f.mu.Unlock() }

// DropReplyNext makes the next n requests be done and then close the
// connection before their answer is sent (front-ends that do not consult
// it ignore it).
func (f *Faults) DropReplyNext(n int) { f.mu.Lock(); addCount(&f.dropRe, n); f.mu.Unlock() }

// StallNext makes the next n requests go unanswered.
func (f *Faults) StallNext(n int) { f.mu.Lock(); addCount(&f.stall, n); f.mu.Unlock() }

// GarbleNext replaces the next n replies with garbage.
func (f *Faults) GarbleNext(n int) { f.mu.Lock(); addCount(&f.garble, n); f.mu.Unlock() }

// FailAlways makes every setting command raise this device error until
// Reset.
func (f *Faults) FailAlways(code int, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = &DeviceError{Code: code, Message: message}
}

func addCount(p *int, n int) {
	if n == Always || *p == Always {
		*p = Always
		return
	}
	*p += n
}

// SetDelay delays every reply by d (0 to stop).
func (f *Faults) SetDelay(d time.Duration) { f.mu.Lock(); f.delay, f.delayN = d, Always; f.mu.Unlock() }

// DelayNext delays the next n replies by d.
func (f *Faults) DelayNext(n int, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay, f.delayN = d, n
}

// FailNext makes the next setting command raise this device error.
func (f *Faults) FailNext(code int, message string) {
	f.mu.Lock()
	f.failures = append(f.failures, DeviceError{Code: code, Message: message})
	f.mu.Unlock()
}

// SlipNext makes the next motion of a stepper motor lose n steps: it
// stops n steps short of where its count says it is, and its count is off
// by n from then on (an emulator with a stepper, the DD-100's, takes it).
func (f *Faults) SlipNext(n int) { f.SlipEach(n, 1) }

// SlipEach makes each of the next count motions of a stepper motor lose
// steps more (Always: every motion until Reset).
func (f *Faults) SlipEach(steps, count int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if count == Always {
		f.slipAlways += steps
		return
	}
	for i := range count {
		if i == len(f.slips) {
			f.slips = append(f.slips, 0)
		}
		f.slips[i] += steps
	}
}

// HasStepper marks these faults as a device's with a stepper motor: Inject
// takes a slip for it (an emulator calls it before it serves).
func (f *Faults) HasStepper() { f.mu.Lock(); f.stepper = true; f.mu.Unlock() }

// TakeSlip returns (and consumes) the steps the motion about to run loses.
func (f *Faults) TakeSlip() int {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.slipAlways
	if len(f.slips) > 0 {
		n += f.slips[0]
		f.slips = f.slips[1:]
	}
	return n
}

// Reset clears every pending fault.
func (f *Faults) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Not *f = Faults{}: that would overwrite the held mutex with an
	// unlocked one.
	f.drop, f.dropRe, f.stall, f.garble, f.delay, f.delayN, f.failures, f.failing = 0, 0, 0, 0, 0, 0, nil, nil
	f.slips, f.slipAlways = nil, 0 // a stepper stays one
}

// The Take methods are safe on a nil *Faults (no faults), as Delay and
// TakeFailure are: they name their counter by a selector that take calls
// after its nil check (evaluating &f.drop on a nil f would panic first).

// TakeDrop reports (and consumes) a pending drop.
func (f *Faults) TakeDrop() bool { return f.take(func(f *Faults) *int { return &f.drop }) }

// TakeDropReply reports (and consumes) a pending drop of a reply.
func (f *Faults) TakeDropReply() bool { return f.take(func(f *Faults) *int { return &f.dropRe }) }

// TakeStall reports (and consumes) a pending stall.
func (f *Faults) TakeStall() bool { return f.take(func(f *Faults) *int { return &f.stall }) }

// TakeGarble reports (and consumes) a pending garble.
func (f *Faults) TakeGarble() bool { return f.take(func(f *Faults) *int { return &f.garble }) }

// Delay is the delay of the reply about to be sent (consuming one of a
// counted delay).
func (f *Faults) Delay() time.Duration {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.delayN == Always:
		return f.delay
	case f.delayN > 0:
		f.delayN--
		return f.delay
	}
	return 0
}

// TakeFailure returns (and consumes) the next pending device error.
func (f *Faults) TakeFailure() (DeviceError, bool) {
	if f == nil {
		return DeviceError{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failures) == 0 {
		if f.failing != nil {
			return *f.failing, true
		}
		return DeviceError{}, false
	}
	e := f.failures[0]
	f.failures = f.failures[1:]
	return e, true
}

func (f *Faults) take(counter func(*Faults) *int) bool {
	if f == nil {
		return false
	}
	n := counter(f)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case *n == Always:
		return true
	case *n > 0:
		*n--
		return true
	}
	return false
}
