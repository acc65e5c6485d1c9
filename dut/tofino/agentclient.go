package tofino

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"testbed/dut/p4switch"
	"testbed/transport"
)

// AgentError is an operation the agent answered with an error.
type AgentError struct {
	Op      string
	Kind    string // bad_request, not_found, bfrt, internal
	Message string
}

func (e *AgentError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Kind, e.Message)
}

// Is makes the agent's not_found answer the switch kind's
// p4switch.ErrNotFound, and an unsupported operation its ErrUnsupported.
func (e *AgentError) Is(target error) bool {
	return target == p4switch.ErrNotFound && e.Kind == "not_found" ||
		target == p4switch.ErrUnsupported && e.Kind == KindUnsupported // setup.go
}

// IsNotFound reports whether err is the agent saying a name does not exist.
func IsNotFound(err error) bool {
	var ae *AgentError
	return errors.As(err, &ae) && ae.Kind == "not_found"
}

// agentClient speaks the agent protocol (agent/PROTOCOL.md) over a stream
// it dials on demand, and redials once if the stream is lost: at once when
// the request was not yet written, and otherwise only as opRetries allows
// for its op (agentretry.go).
type agentClient struct {
	dial func(ctx context.Context) (net.Conn, error)
	// token is what a new connection presents first ("auth"); it may
	// install the token on the switch the first time it is asked.
	token      func(ctx context.Context) (string, error)
	transcript *transport.Transcript
	timeout    time.Duration
	// device names the switch in errors (its address).
	device string
	// maxReply bounds one reply line (0: maxAgentReply).
	maxReply int

	mu     sync.Mutex
	conn   net.Conn
	rd     *bufio.Reader
	nextID int64
}

type agentRequest struct {
	ID   int64  `json:"id"`
	Op   string `json:"op"`
	Args any    `json:"args,omitempty"`
}

type agentResponse struct {
	ID     int64           `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

// call sends op with args and decodes the result into out (may be nil).
func (a *agentClient) call(ctx context.Context, op string, args any, out any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	sent, err := a.exchange(ctx, op, args, out)
	if err == nil || !transport.IsConnectionLost(err) || ctx.Err() != nil {
		return err
	}
	if !sent {
		// Lost before the request line went out (dial, auth): the
		// switch has not seen it.
		a.transcript.Note("agent connection lost; reconnecting")
		_, err = a.exchange(ctx, op, args, out)
		return err
	}
	return a.retryAfterLoss(ctx, op, args, out, err)
}

// exchange sends one request and reads its answer; sent reports whether
// the request line was (or began to be) written, after which the switch
// may have done it whatever the error.
func (a *agentClient) exchange(ctx context.Context, op string, args any, out any) (sent bool, err error) {
	if a.conn == nil {
		c, err := a.dial(ctx)
		if err != nil {
			return false, fmt.Errorf("agent: %w", err)
		}
		a.conn, a.rd = c, bufio.NewReaderSize(c, 64<<10)
		if err := a.auth(ctx); err != nil {
			a.reset()
			return false, err
		}
	}
	a.nextID++
	id := a.nextID
	line, err := json.Marshal(agentRequest{ID: id, Op: op, Args: args})
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	return true, a.roundTrip(ctx, op, id, line, out)
}

// roundTrip writes a request line and reads the answer with its id.
func (a *agentClient) roundTrip(ctx context.Context, op string, id int64, line []byte, out any) error {
	a.transcript.Sent(string(line))
	// SSH channels do not support deadlines: the context's end closes the
	// stream instead, which unblocks the read below.
	conn := a.conn
	conn.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if _, err := a.conn.Write(append(line, '\n')); err != nil {
		if ctx.Err() != nil {
			a.reset()
			return fmt.Errorf("%s: send: %w", op, ctx.Err())
		}
		a.reset()
		return fmt.Errorf("%s: send: %w: %w", op, err, transport.ErrConnectionLost)
	}
	for {
		reply, err := a.readReply()
		if errors.Is(err, errReplyTooLong) {
			a.reset() // the rest of the line is still on the stream
			a.transcript.Error(err)
			return fmt.Errorf("switch %s: %s: %w", a.device, op, err)
		}
		if err != nil {
			a.reset()
			if ctx.Err() != nil {
				a.transcript.Error(fmt.Errorf("no reply: %w", ctx.Err()))
				return fmt.Errorf("%s: no reply: %w", op, ctx.Err())
			}
			a.transcript.Error(err)
			return fmt.Errorf("%s: read: %w: %w", op, err, transport.ErrConnectionLost)
		}
		a.transcript.Received(string(reply[:len(reply)-1]))
		var r agentResponse
		if err := json.Unmarshal(reply, &r); err != nil {
			a.reset()
			return fmt.Errorf("%s: reply is not a protocol message (%q): %w", op, truncate(string(reply), 120), err)
		}
		if r.ID < id {
			continue // the late answer to a request that timed out
		}
		if r.ID != id {
			a.reset()
			return fmt.Errorf("%s: reply for request %d, expected %d", op, r.ID, id)
		}
		if !r.OK {
			if r.Error == nil {
				return &AgentError{Op: op, Kind: "internal", Message: "failure without an error"}
			}
			return &AgentError{Op: op, Kind: r.Error.Kind, Message: r.Error.Message}
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return fmt.Errorf("%s: result %s: %w", op, truncate(string(r.Result), 120), err)
			}
		}
		return nil
	}
}

// auth presents the run's token on a new connection, as the agent asks of
// its first request. The transcript gets the request with the token
// replaced by "***".
func (a *agentClient) auth(ctx context.Context) error {
	tok, err := a.token(ctx)
	if err != nil {
		return fmt.Errorf("agent: auth: %w", err)
	}
	a.nextID++
	id := a.nextID
	line, err := json.Marshal(agentRequest{ID: id, Op: "auth", Args: map[string]string{"token": tok}})
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	shown, _ := json.Marshal(agentRequest{ID: id, Op: "auth", Args: map[string]string{"token": "***"}})
	a.transcript.Sent(string(shown))
	conn := a.conn
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("auth: send: %w: %w", err, transport.ErrConnectionLost)
	}
	reply, err := a.readReply()
	if errors.Is(err, errReplyTooLong) {
		return fmt.Errorf("switch %s: auth: %w", a.device, err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("auth: no reply: %w", ctx.Err())
		}
		return fmt.Errorf("auth: read: %w: %w", err, transport.ErrConnectionLost)
	}
	a.transcript.Received(string(reply[:len(reply)-1]))
	var r agentResponse
	if err := json.Unmarshal(reply, &r); err != nil {
		return fmt.Errorf("auth: reply is not a protocol message (%q): %w", truncate(string(reply), 120), err)
	}
	if !r.OK {
		if r.Error == nil {
			return &AgentError{Op: "auth", Kind: "internal", Message: "failure without an error"}
		}
		return &AgentError{Op: "auth", Kind: r.Error.Kind, Message: r.Error.Message}
	}
	return nil
}

// maxAgentReply bounds one line the agent answers. The largest legitimate
// answer is a table.get of a whole table: the largest table of the programs
// in p4/* is LinkGuardian's loss emulation, keyed by a 20-bit random number
// (lg.DropRandomBits), so it holds at most 2^20 entries however
// LG_DROP_TABLE_SIZE is built (65536 by default), each about 80 bytes of
// JSON: 84 MiB (TestAgentReplyBoundHoldsTheLargestTable computes it from
// the contract). A register dump is far smaller: reg.range reads at most
// MaxRegisterRange (4096) values of at most 20 digits, 86 KB. A line longer
// than this is not the protocol, and reading it whole would hold as much
// memory as the far end cares to send.
const maxAgentReply = 128 << 20

// errReplyTooLong is a reply line longer than the client reads.
var errReplyTooLong = errors.New("reply line too long")

// readReply reads one line of at most maxReply bytes, newline included.
func (a *agentClient) readReply() ([]byte, error) {
	limit := a.maxReply
	if limit <= 0 {
		limit = maxAgentReply
	}
	var line []byte
	for {
		frag, err := a.rd.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			return nil, fmt.Errorf("%w: over %d bytes with no end of line (the largest table dump the programs allow is smaller): the agent is not speaking the protocol: %w", errReplyTooLong, limit, transport.ErrGarbled)
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

func (a *agentClient) reset() {
	if a.conn != nil {
		a.conn.Close()
		a.conn, a.rd = nil, nil
	}
}

func (a *agentClient) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reset()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
