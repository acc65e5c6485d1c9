package wire

import (
	"net"
	"sync"
)

// ConnServer is the TCP side of a line-oriented instrument emulator (SCPI
// on port 5025 and the like): it accepts connections, serves each in its
// own goroutine, and on Close closes the listener and every open
// connection and waits for them. The zero value is ready to Start.
type ConnServer struct {
	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]bool
	closing bool
	wg      sync.WaitGroup
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves every connection
// with serve; the connection is closed when serve returns.
func (s *ConnServer) Start(addr string, serve func(net.Conn)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ln = ln
	if s.conns == nil {
		s.conns = map[net.Conn]bool{}
	}
	s.mu.Unlock()
	s.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closing {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.conns[c] = true
			s.mu.Unlock()
			s.Go(func() {
				defer func() {
					c.Close()
					s.mu.Lock()
					delete(s.conns, c)
					s.mu.Unlock()
				}()
				serve(c)
			})
		}
	})
	return nil
}

// Go runs f in a goroutine that Close waits for (a pseudo-terminal's
// reader, for one).
func (s *ConnServer) Go(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Addr is the listener's host:port.
func (s *ConnServer) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, closes every connection, then calls each of
// closers (what else makes a goroutine of Go return, such as a pty) and
// waits for every goroutine; it returns the first error.
func (s *ConnServer) Close(closers ...func() error) error {
	s.mu.Lock()
	s.closing = true
	for c := range s.conns {
		c.Close()
	}
	ln := s.ln
	s.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	for _, c := range closers {
		if e := c(); err == nil {
			err = e
		}
	}
	s.wg.Wait()
	return err
}
