//go:build linux

package hostagent

import (
	"net"
	"syscall"

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
