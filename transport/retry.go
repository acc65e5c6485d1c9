package transport

import (
	"context"
	"errors"
)

// ErrGarbled marks a reply the device's protocol does not allow (a line
// that does not parse, a body that is not the expected JSON): the
// exchange is out of step and may be tried once more.
var ErrGarbled = errors.New("garbled reply")

// RetryOnce is the one retry of every driver, line or REST: it runs op,
// and when op fails with a lost connection or an error retryable reports
// (a garbled reply, typically) while ctx lives, it notes it in tr, runs
// reset (may be nil: drop the connection that is out of step) and op once
// more. A timeout is never retried: the device may still be acting on the
// command. op must be idempotent: a read, or an absolute setting
// confirmed by a read-back.
func RetryOnce(ctx context.Context, tr *Transcript, retryable func(error) bool, reset func(), op func() error) error {
	err := op()
	if err == nil || ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if !IsConnectionLost(err) && !errors.Is(err, ErrGarbled) && (retryable == nil || !retryable(err)) {
		return err
	}
	if reset != nil {
		reset()
	}
	tr.Note("%v; trying once more on a new connection", err)
	return op()
}
