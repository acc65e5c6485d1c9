package wire

import (
	"sync"
	"time"
)

// Faults makes an emulator misbehave on purpose, for tests and rehearsals.
// Every protocol front-end consults its Faults for each request it serves:
//   - drop: close the connection instead of answering;
//   - stall: never answer (the client's deadline must fire);
//   - garble: answer with bytes the protocol does not allow;
//   - delay: answer late;
//   - fail: raise a device error the way the device reports one (SCPI error
//     queue entry, "Error-N" line, HTTP error body).
//
// The zero value injects nothing. Methods are safe for concurrent use.
type Faults struct {
	mu       sync.Mutex
	drop     int
	stall    int
	garble   int
	delay    time.Duration
	failures []DeviceError
}

// DeviceError is an error the device itself reports.
type DeviceError struct {
	Code    int
	Message string
}

// DropNext makes the next n requests close the connection unanswered.
func (f *Faults) DropNext(n int) { f.mu.Lock(); f.drop += n; f.mu.Unlock() }

// StallNext makes the next n requests go unanswered.
func (f *Faults) StallNext(n int) { f.mu.Lock(); f.stall += n; f.mu.Unlock() }

// GarbleNext replaces the next n replies with garbage.
func (f *Faults) GarbleNext(n int) { f.mu.Lock(); f.garble += n; f.mu.Unlock() }

// SetDelay delays every reply by d (0 to stop).
func (f *Faults) SetDelay(d time.Duration) { f.mu.Lock(); f.delay = d; f.mu.Unlock() }

// FailNext makes the next setting command raise this device error.
func (f *Faults) FailNext(code int, message string) {
	f.mu.Lock()
	f.failures = append(f.failures, DeviceError{Code: code, Message: message})
	f.mu.Unlock()
}

// Reset clears every pending fault.
func (f *Faults) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Not *f = Faults{}: that would overwrite the held mutex with an
	// unlocked one.
	f.drop, f.stall, f.garble, f.delay, f.failures = 0, 0, 0, 0, nil
}

// TakeDrop reports (and consumes) a pending drop.
func (f *Faults) TakeDrop() bool { return f.take(&f.drop) }

// TakeStall reports (and consumes) a pending stall.
func (f *Faults) TakeStall() bool { return f.take(&f.stall) }

// TakeGarble reports (and consumes) a pending garble.
func (f *Faults) TakeGarble() bool { return f.take(&f.garble) }

// Delay is the current reply delay.
func (f *Faults) Delay() time.Duration {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delay
}

// TakeFailure returns (and consumes) the next pending device error.
func (f *Faults) TakeFailure() (DeviceError, bool) {
	if f == nil {
		return DeviceError{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failures) == 0 {
		return DeviceError{}, false
	}
	e := f.failures[0]
	f.failures = f.failures[1:]
	return e, true
}

func (f *Faults) take(n *int) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if *n > 0 {
		*n--
		return true
	}
	return false
}
