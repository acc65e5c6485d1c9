//go:build linux

package orchestrator

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A pseudo-terminal is a terminal, with the width it was given.
func TestIsTerminalOnAPseudoTerminal(t *testing.T) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 123}); err != nil {
		t.Fatal(err)
	}
	if !IsTerminal(s.Fd()) {
		t.Fatalf("a pseudo-terminal is not taken for a terminal")
	}
	if w := TerminalWidth(s.Fd()); w != 123 {
		t.Errorf("width %d, want 123", w)
	}
	t.Setenv("TERM", "xterm")
	p := ProgressFor(s)
	if !p.live || p.Width != 123 {
		t.Errorf("display on a terminal: live %v width %d", p.live, p.Width)
	}
	t.Setenv("TERM", "dumb")
	if ProgressFor(s).live {
		t.Errorf("TERM=dumb got a live display")
	}
}
