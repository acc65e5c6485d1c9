package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tarm/serial"
)

// ErrClosed is returned by a LineConn after Close or after the peer hung up.
var ErrClosed = errors.New("connection closed")

// LineConn is a line-oriented connection to an instrument over TCP or a
// serial port. Reads happen in one goroutine that delivers complete lines, so
// every read can honour a context and a deadline even on a serial port, whose
// file descriptor has no deadlines of its own.
type LineConn struct {
	addr       Address
	rw         io.ReadWriteCloser
	eol        string
	transcript *Transcript
	maxLine    int

	lines chan string
	done  chan struct{} // closed when the reader goroutine exits
	err   error         // why the reader stopped; read after done is closed

	closeOnce sync.Once
	closing   chan struct{}
	wmu       sync.Mutex
}

// DialOptions configure Dial.
type DialOptions struct {
	// EOL terminates every line sent: "\n" for SCPI over TCP, "\r" for the
	// OZ Optics DD-100. Default "\n".
	EOL        string
	Transcript *Transcript
	// MaxLine bounds one received line, terminator excluded (default
	// DefaultMaxLine). A longer line ends the connection with an error
	// wrapping ErrGarbled: the device is not speaking its protocol, and
	// the line is not held whole however long the far end makes it.
	MaxLine int
}

// DefaultMaxLine is the longest line an instrument's reply may have
// unless its driver says otherwise: the longest SCPI answer the drivers
// read is a Polatis switch's port states (":oxc:swit:port:stat?" over
// every port, "ENABLED," 8 bytes a port) or its connection map ("(@1,385),"
// 10 bytes a pair), for at most 768 ports (384x384, the largest Series
// 7000), under 8 KB; the N77xx's and DD-100's are under 100 bytes. 1 MiB
// leaves a hundred times that.
const DefaultMaxLine = 1 << 20

// Dial opens a tcp:// or serial:// address.
func Dial(ctx context.Context, address string, opts DialOptions) (*LineConn, error) {
	a, err := ParseAddress(address)
	if err != nil {
		return nil, err
	}
	var rw io.ReadWriteCloser
	switch a.Scheme {
	case "tcp":
		var d net.Dialer
		if _, ok := ctx.Deadline(); !ok {
			d.Timeout = 5 * time.Second
		}
		c, err := d.DialContext(ctx, "tcp", a.Host)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", address, err)
		}
		rw = c
	case "serial":
		// A short read timeout (VTIME) lets the reader goroutine notice Close.
		p, err := serial.OpenPort(&serial.Config{Name: a.Path, Baud: a.Baud, ReadTimeout: 100 * time.Millisecond})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", address, err)
		}
		rw = p
	default:
		return nil, fmt.Errorf("dial %s: scheme %q is not a line transport (expected tcp or serial)", address, a.Scheme)
	}
	eol := opts.EOL
	if eol == "" {
		eol = "\n"
	}
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	c := &LineConn{
		addr: a, rw: rw, eol: eol, transcript: opts.Transcript, maxLine: opts.MaxLine,
		lines: make(chan string, 64), done: make(chan struct{}), closing: make(chan struct{}),
	}
	c.transcript.Note("connected to %s", address)
	go c.readLoop()
	return c, nil
}

// Address returns the address this connection was dialled on.
func (c *LineConn) Address() string { return c.addr.Raw }

func (c *LineConn) readLoop() {
	defer close(c.done)
	r := bufio.NewReader(c.rw)
	var partial strings.Builder
	for {
		b, err := r.ReadByte()
		if err != nil {
			select {
			case <-c.closing:
				c.err = ErrClosed
				return
			default:
			}
			if c.addr.Scheme == "serial" && (err == io.EOF || errors.Is(err, os.ErrDeadlineExceeded)) {
				// VTIME expired with no byte: just poll again. A pty
				// whose master went away answers EIO instead.
				r.Reset(c.rw)
				continue
			}
			if err == io.EOF {
				err = fmt.Errorf("%w by peer", ErrClosed)
			}
			c.err = err
			return
		}
		switch b {
		case '\n':
			line := strings.TrimSuffix(partial.String(), "\r")
			partial.Reset()
			select {
			case c.lines <- line:
			case <-c.closing:
				c.err = ErrClosed
				return
			}
		default:
			if partial.Len() >= c.maxLine {
				c.err = fmt.Errorf("%s: a line longer than %d bytes with no end of line: %w", c.addr.Raw, c.maxLine, ErrGarbled)
				return
			}
			partial.WriteByte(b)
		}
	}
}

// Send writes s followed by the line terminator.
func (c *LineConn) Send(ctx context.Context, s string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return c.readerErr()
	default:
	}
	if nc, ok := c.rw.(net.Conn); ok {
		dl, ok := ctx.Deadline()
		if !ok {
			dl = time.Now().Add(5 * time.Second)
		}
		_ = nc.SetWriteDeadline(dl)
	}
	c.transcript.Sent(s)
	if _, err := io.WriteString(c.rw, s+c.eol); err != nil {
		c.transcript.Error(err)
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// ReadLine returns the next line without its terminator, waiting until ctx
// is done. Callers give ctx a deadline: a device that never answers must
// not hang a run.
func (c *LineConn) ReadLine(ctx context.Context) (string, error) {
	select {
	case l := <-c.lines:
		c.transcript.Received(l)
		return l, nil
	default:
	}
	select {
	case l := <-c.lines:
		c.transcript.Received(l)
		return l, nil
	case <-c.done:
		// Drain lines that arrived before the peer hung up.
		select {
		case l := <-c.lines:
			c.transcript.Received(l)
			return l, nil
		default:
		}
		err := c.readerErr()
		c.transcript.Error(err)
		return "", err
	case <-ctx.Done():
		err := fmt.Errorf("read: no reply: %w", ctx.Err())
		c.transcript.Error(err)
		return "", err
	}
}

// Drain discards lines already received (e.g. late replies after a timeout).
func (c *LineConn) Drain() {
	for {
		select {
		case l := <-c.lines:
			if l != "" {
				c.transcript.Note("discarded stale line %q", l)
			}
		default:
			return
		}
	}
}

func (c *LineConn) readerErr() error {
	if c.err == nil {
		return ErrClosed
	}
	return c.err
}

// Close closes the connection and stops the reader.
func (c *LineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closing)
		err = c.rw.Close()
		<-c.done
		c.transcript.Note("closed")
	})
	return err
}

// ErrConnectionLost marks an error after which the connection is gone and
// a new one must be made.
var ErrConnectionLost = errors.New("connection lost")

// IsConnectionLost reports whether err means the connection itself is gone
// (closed, reset, broken pipe) rather than a reply being late or wrong.
func IsConnectionLost(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, ErrConnectionLost) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
