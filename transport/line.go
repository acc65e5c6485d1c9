package transport

import (
	"context"
	"strings"
	"time"
)

// Line is a line connection to one device that is dialled again after it
// was dropped. A driver drops the connection whenever it is out of step (a
// timeout, a reply the protocol does not allow, the peer hanging up) so a
// late answer to an old query is never taken for a new one; the next
// exchange dials again and runs the device's greeting first.
//
// A Line is not safe for concurrent use: a driver serialises its exchanges
// with a device under its own lock, and a Line is used under it.
type Line struct {
	addr string
	opts LineOptions

	conn    *LineConn
	dialled bool
}

// LineOptions configure a Line.
type LineOptions struct {
	DialOptions
	// DialTimeout bounds a dial whose context has no earlier deadline
	// (0: the context's own, and Dial's 5 s on TCP without one).
	DialTimeout time.Duration
	// Hello runs on every new connection before anything else uses it,
	// with the connection current (Conn returns it): the device's
	// greeting, clearing status and reading its identity. Its error drops
	// the connection and is returned by Connect.
	Hello func(ctx context.Context) error
	// DialError names the device and what was being done in a dial's error
	// (default: the error as Dial returns it).
	DialError func(error) error
	// Retryable reports errors besides a lost connection after which an
	// idempotent exchange is tried once more on a new connection: a
	// garbled reply, which leaves the old one out of step. A timeout is
	// never retried: the device may still be acting on the command.
	Retryable func(error) bool
}

// NewLine returns a Line to address; nothing is dialled until Connect.
func NewLine(address string, opts LineOptions) *Line {
	return &Line{addr: address, opts: opts}
}

// Address is the address the Line dials.
func (l *Line) Address() string { return l.addr }

// Conn is the current connection, nil when none is open.
func (l *Line) Conn() *LineConn { return l.conn }

// Connect dials and greets the device unless a connection is open.
func (l *Line) Connect(ctx context.Context) error {
	if l.conn != nil {
		return nil
	}
	if l.dialled {
		verb := "reconnecting to"
		if strings.HasPrefix(l.addr, "serial:") {
			verb = "reopening"
		}
		l.opts.Transcript.Note("%s %s", verb, l.addr)
	}
	dctx := ctx
	if l.opts.DialTimeout > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, l.opts.DialTimeout)
		defer cancel()
	}
	c, err := Dial(dctx, l.addr, l.opts.DialOptions)
	if err != nil {
		if l.opts.DialError != nil {
			err = l.opts.DialError(err)
		}
		return err
	}
	l.conn, l.dialled = c, true
	if l.opts.Hello != nil {
		if err := l.opts.Hello(ctx); err != nil {
			l.Drop()
			return err
		}
	}
	return nil
}

// Drop closes the current connection, if any: the next Connect dials
// again.
func (l *Line) Drop() {
	if l.conn != nil {
		l.conn.Close()
		l.conn = nil
	}
}

// Retryable reports whether err is one Retry tries once more after: a
// lost connection, or one of the device's Retryable errors.
func (l *Line) Retryable(err error) bool {
	return IsConnectionLost(err) || (l.opts.Retryable != nil && l.opts.Retryable(err))
}

// Retry connects if needed and runs op; when that fails with a Retryable
// error while ctx lives, it drops the connection and does both once more.
// op must be idempotent: a read, or an absolute setting confirmed by a
// read-back.
func (l *Line) Retry(ctx context.Context, op func() error) error {
	try := func() error {
		if err := l.Connect(ctx); err != nil {
			return err
		}
		return op()
	}
	return RetryOnce(ctx, l.opts.Transcript, l.Retryable, l.Drop, try)
}

// Close closes the current connection; the Line may be connected again.
func (l *Line) Close() error {
	if l.conn == nil {
		return nil
	}
	err := l.conn.Close()
	l.conn = nil
	return err
}
