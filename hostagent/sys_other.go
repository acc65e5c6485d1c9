//go:build !linux

package hostagent

import (
	"net"
	"os/exec"
	"runtime"
	"time"
)

const tcpInfoRetrans = false

func socketRetrans(net.Conn) (func() (uint32, error), string) {
	return nil, "retransmission counts of a socket are read from TCP_INFO on linux only, not on " + runtime.GOOS
}

// shortSleeper: no precise sleep here; waits use the runtime's timers.
type shortSleeper struct{}

func newShortSleeper() *shortSleeper           { return nil }
func (*shortSleeper) sleep(time.Duration) bool { return false }
func (*shortSleeper) close()                   {}

// ownProcessGroup: the process alone is killed on cancellation here.
func ownProcessGroup(*exec.Cmd) {}

// kernelStamps: transmit timestamps are read on linux only.
type kernelStamps struct{}

func armKernelStamps(net.Conn) (*kernelStamps, string) {
	return nil, "kernel transmit timestamps are read on linux only, not on " + runtime.GOOS
}

func (*kernelStamps) fct1(int, time.Time) (time.Duration, error) { return 0, nil }
