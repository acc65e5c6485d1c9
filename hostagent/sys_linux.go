//go:build linux

package hostagent

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tcpInfoRetrans is true where socketRetrans can read TCP_INFO.
const tcpInfoRetrans = true

// socketRetrans returns a reader of the socket's tcpi_total_retrans (Linux
// TCP_INFO), or nil and the reason it cannot be read.
func socketRetrans(c net.Conn) (func() (uint32, error), string) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, "not a kernel socket"
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err.Error()
	}
	return func() (uint32, error) {
		var info *unix.TCPInfo
		var serr error
		if err := raw.Control(func(fd uintptr) {
			info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		}); err != nil {
			return 0, err
		}
		if serr != nil {
			return 0, serr
		}
		return info.Total_retrans, nil
	}, ""
}

// shortSleeper sleeps short times precisely: a timerfd (an hrtimer, no
// millisecond rounding) read through the runtime's network poller, so the
// sleeping goroutine holds no thread or P while it waits.
type shortSleeper struct {
	fd  int
	f   *os.File
	buf [8]byte
}

// newShortSleeper returns nil where the timerfd cannot be had.
func newShortSleeper() *shortSleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	return &shortSleeper{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

// sleep sleeps d (> 0) and reports whether it could.
func (s *shortSleeper) sleep(d time.Duration) bool {
	if s == nil {
		return false
	}
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, time.Microsecond)))}
	if err := unix.TimerfdSettime(s.fd, 0, &its, nil); err != nil {
		return false
	}
	_, err := s.f.Read(s.buf[:])
	return err == nil
}

func (s *shortSleeper) close() {
	if s != nil {
		s.f.Close()
	}
}

// ownProcessGroup starts cmd in a process group of its own and has its
// cancellation kill the whole group, children included.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
