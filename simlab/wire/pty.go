package wire

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// PTY is a pseudo-terminal pair: the emulator serves the master side; a
// driver opens the slave by path exactly as it would open /dev/ttyUSB0.
// The emulator keeps its own slave descriptor open so the line survives a
// driver closing and reopening the port.
type PTY struct {
	Master *os.File
	slave  *os.File
	Path   string
}

// OpenPTY opens a new pseudo-terminal pair in raw mode.
func OpenPTY() (*PTY, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	// Use SyscallConn, not Fd(): Fd() would switch the master to blocking
	// mode and Close could then not interrupt a pending read.
	raw, err := m.SyscallConn()
	if err != nil {
		m.Close()
		return nil, err
	}
	var n int
	var ierr error
	if err := raw.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr != nil {
			return
		}
		n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
	}); err != nil || ierr != nil {
		m.Close()
		return nil, fmt.Errorf("unlock pty: %v %v", err, ierr)
	}
	path := fmt.Sprintf("/dev/pts/%d", n)
	s, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Raw mode (cfmakeraw): no echo, no CR/NL translation, byte at a time.
	sraw, _ := s.SyscallConn()
	_ = sraw.Control(func(fd uintptr) {
		t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if err != nil {
			ierr = err
			return
		}
		t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		t.Oflag &^= unix.OPOST
		t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		t.Cflag &^= unix.CSIZE | unix.PARENB
		t.Cflag |= unix.CS8
		t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
		ierr = unix.IoctlSetTermios(int(fd), unix.TCSETS, t)
	})
	if ierr != nil {
		m.Close()
		s.Close()
		return nil, fmt.Errorf("raw mode on %s: %w", path, ierr)
	}
	return &PTY{Master: m, slave: s, Path: path}, nil
}

func (p *PTY) Close() error {
	e1 := p.Master.Close()
	e2 := p.slave.Close()
	if e1 != nil {
		return e1
	}
	return e2
}
