package sshdtest

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

// Shared holds a server that a whole test binary shares, for the tests
// that need no server of their own (those that keep nothing in its home
// directory, or only under a name of their own): the first test that
// asks starts it (Server), the package's TestMain stops it after the
// tests (Close). It ends with the test binary like any other
// (internal/proctest). Its zero value is ready to use.
type Shared struct {
	Options Options

	once    sync.Once
	srv     *Server
	skip    string
	err     error
	mu      sync.Mutex
	cleanup []func()
}

// Server starts the shared server on the first call and returns it; skip
// says why there is none (sshd missing) and err why it failed to start.
func (sh *Shared) Server() (srv *Server, skip string, err error) {
	sh.once.Do(func() {
		defer func() {
			switch r := recover().(type) {
			case nil:
			case sharedSkip:
				sh.skip = string(r)
			case sharedFail:
				sh.err = errors.New(string(r))
			default:
				panic(r)
			}
		}()
		sh.srv = Start(sh, sh.Options)
	})
	return sh.srv, sh.skip, sh.err
}

// Close stops the server and removes its directory (TestMain, after the
// tests).
func (sh *Shared) Close() {
	sh.mu.Lock()
	fs := sh.cleanup
	sh.cleanup = nil
	sh.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
}

type sharedSkip string
type sharedFail string

// The TB methods Start uses, for a server that outlives every test.

func (sh *Shared) Helper() {}

func (sh *Shared) Cleanup(f func()) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.cleanup = append(sh.cleanup, f)
}

func (sh *Shared) TempDir() string {
	dir, err := os.MkdirTemp("", "sshdtest-")
	if err != nil {
		sh.Fatal(err)
	}
	sh.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (sh *Shared) Failed() bool { return false }

func (sh *Shared) Logf(format string, args ...any) {}

func (sh *Shared) Fatal(args ...any) { panic(sharedFail(fmt.Sprint(args...))) }

func (sh *Shared) Fatalf(format string, args ...any) {
	panic(sharedFail(fmt.Sprintf(format, args...)))
}

func (sh *Shared) Skipf(format string, args ...any) {
	panic(sharedSkip(fmt.Sprintf(format, args...)))
}
