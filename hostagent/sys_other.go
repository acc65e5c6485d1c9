//go:build !linux

package hostagent

import (
	"net"
	"runtime"
)

const tcpInfoRetrans = false

func socketRetrans(net.Conn) (func() (uint32, error), string) {
	return nil, "retransmission counts of a socket are read from TCP_INFO on linux only, not on " + runtime.GOOS
}
