package hostagent

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// ServerOptions bound what one client can hold of the agent: how long a
// request's header and body may take to arrive, a response to be written,
// a kept-alive connection to sit idle, and how many connections one
// client address may have open at once. Every request is short (a run is
// started by one request and polled by others), so none needs longer.
type ServerOptions struct {
	ReadHeaderTimeout time.Duration // default 10 s
	ReadTimeout       time.Duration // the whole request, body included; default 30 s
	WriteTimeout      time.Duration // default 30 s
	IdleTimeout       time.Duration // default 60 s
	MaxConnsPerClient int           // default 32
	Log               *slog.Logger
}

func (o *ServerOptions) defaults() {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 30 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.MaxConnsPerClient <= 0 {
		o.MaxConnsPerClient = 32
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// NewServer is the HTTP server of an agent's handler with the options'
// timeouts; Serve it on LimitConnsPerClient(ln, ...) of the listener.
func NewServer(h http.Handler, o ServerOptions) *http.Server {
	o.defaults()
	return &http.Server{Handler: h, ReadHeaderTimeout: o.ReadHeaderTimeout, ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, IdleTimeout: o.IdleTimeout, ErrorLog: slog.NewLogLogger(o.Log.Handler(), slog.LevelWarn)}
}

// LimitConnsPerClient wraps a listener so that one client address (its
// IP) holds at most o.MaxConnsPerClient open connections: one more is
// closed as soon as it is accepted, and logged.
func LimitConnsPerClient(ln net.Listener, o ServerOptions) net.Listener {
	o.defaults()
	return &limitListener{Listener: ln, max: o.MaxConnsPerClient, log: o.Log, open: map[string]int{}}
}

type limitListener struct {
	net.Listener
	max int
	log *slog.Logger

	mu   sync.Mutex
	open map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := c.RemoteAddr().String()
		if h, _, err := net.SplitHostPort(client); err == nil {
			client = h
		}
		l.mu.Lock()
		n := l.open[client]
		if n >= l.max {
			l.mu.Unlock()
			l.log.Warn("hostagent: connection refused: client holds too many", "client", client, "open", n, "max", l.max)
			c.Close()
			continue
		}
		l.open[client] = n + 1
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.open[client]--; l.open[client] <= 0 {
				delete(l.open, client)
			}
			l.mu.Unlock()
		}}, nil
	}
}

type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
