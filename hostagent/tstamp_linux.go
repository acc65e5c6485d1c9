//go:build linux

package hostagent

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel timestamps for fct1 on kernel sockets (Linux
// Documentation/networking/timestamping.rst): SO_TIMESTAMPING with
// SOF_TIMESTAMPING_TX_SOFTWARE stamps a write's last byte when its
// segment is handed to the driver (SCM_TSTAMP_SND, where a capture at the
// sender sees it), and SOF_TIMESTAMPING_TX_ACK when the ACK covering it
// comes back (SCM_TSTAMP_ACK); OPT_ID keys them by byte, OPT_TSONLY
// returns the stamps without the packet. Both come on the socket's error
// queue, software stamps on the real-time clock.

// kernelStamps is a socket with its transmit stamps armed.
type kernelStamps struct {
	raw syscall.RawConn
	mss int
}

// armKernelStamps arms c's transmit timestamps, or says why it cannot.
func armKernelStamps(c net.Conn) (*kernelStamps, string) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, "not a kernel socket"
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err.Error()
	}
	flags := unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_TX_ACK | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
	ks := &kernelStamps{raw: raw}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags); serr != nil {
			return
		}
		var info *unix.TCPInfo
		if info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); serr == nil {
			ks.mss = int(info.Snd_mss)
		}
	}); err != nil {
		return nil, err.Error()
	}
	if serr != nil {
		return nil, "SO_TIMESTAMPING: " + serr.Error()
	}
	return ks, ""
}

// fct1 reads the stamps of the connection's one write of n bytes, which
// started at wrote: from the first data segment to the ACK covering the
// last byte. A write of one segment is stamped when that segment goes to
// the driver; the kernel stamps only a write's last segment, so a longer
// write is timed from the write itself.
func (k *kernelStamps) fct1(n int, wrote time.Time) (time.Duration, error) {
	var snd, ack int64
	buf := make([]byte, 1)
	oob := make([]byte, 512)
	for range 64 {
		var rerr error
		var oobn int
		if err := k.raw.Read(func(fd uintptr) bool {
			_, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			return true // never wait for the error queue
		}); err != nil {
			return 0, err
		}
		if errors.Is(rerr, unix.EAGAIN) {
			break
		}
		if rerr != nil {
			return 0, rerr
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return 0, err
		}
		var ts int64
		info := uint32(1 << 31)
		for _, m := range msgs {
			switch {
			case m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPING && len(m.Data) >= 16:
				// struct scm_timestamping: three timespecs, [0] software.
				sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
				nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
				ts = sec*1e9 + nsec
			case (m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR) ||
				(m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVERR):
				// struct sock_extended_err: ee_errno u32, ee_origin u8,
				// ee_type, ee_code, ee_pad, ee_info u32, ee_data u32.
				if len(m.Data) >= 16 && m.Data[4] == unix.SO_EE_ORIGIN_TIMESTAMPING {
					info = binary.NativeEndian.Uint32(m.Data[8:12])
				}
			}
		}
		switch {
		case ts == 0:
		case info == unix.SCM_TSTAMP_SND && snd == 0:
			snd = ts
		case info == unix.SCM_TSTAMP_ACK:
			ack = ts
		}
	}
	if ack == 0 || snd == 0 {
		return 0, errors.New("the kernel gave no transmit or ACK timestamp")
	}
	from := snd
	if k.mss <= 0 || n > k.mss {
		from = wrote.UnixNano()
	}
	return time.Duration(ack - from), nil
}
