package voa_test

import (
	"bufio"
	"context"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"testbed/instruments/voa"
)

// FuzzN77xxReply: whatever a Keysight N77xx answers to a SCPI query of
// attenuation (the bytes fuzzed, then the socket closed), the driver, on
// a TCP line on loopback, returns an error or a finite number the reply
// states (SCPI's 9.9E37 and 9.91E37, infinity and not-a-number, are no
// reading); it never hangs (a reply that never comes ends with the socket).
// The greeting (*CLS, *IDN?, the monitors' unit, the error queue) is
// answered as the instrument does.
func FuzzN77xxReply(f *testing.F) {
	for _, s := range []string{
		"+1.25000000E+001\n", "12.5\n", "9.91E37\n", "NaN\n", "+Inf\n", "-inf\n", "1e400\n", "\n", "",
		"-113,\"Undefined header\"\n", "12.5", "12.5\n13\n", "\x00\xff\n",
	} {
		f.Add([]byte(s))
	}
	addr, reply := scriptedLine(f, serveN77xxScript)
	o, err := voa.OpenKeysight(context.Background(), "tcp://"+addr, voa.Options{Timeout: 5 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { o.Close() })
	f.Fuzz(func(t *testing.T, body []byte) {
		reply.Store(&body)
		v, err := o.Attenuation(context.Background(), 1)
		if err != nil {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 9.9e37 { // SCPI's infinity and NaN
			t.Fatalf("attenuation %v from %q: want an error", v, body)
		}
	})
}

// serveN77xxScript answers the driver's greeting as an N7764A does and
// any other query with the current reply, then hangs up.
func serveN77xxScript(c net.Conn, reply *atomic.Pointer[[]byte]) {
	defer c.Close()
	rd := bufio.NewReader(c)
	for {
		cmd, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		cmd = strings.TrimSpace(cmd)
		switch {
		case cmd == "*IDN?":
			c.Write([]byte("Keysight Technologies,N7764A,MY00000001,1.0.0\n"))
		case strings.EqualFold(cmd, ":SYST:ERR?"):
			c.Write([]byte("+0,\"No error\"\n"))
		case strings.HasSuffix(cmd, "?"):
			c.Write(*reply.Load())
			return
		}
	}
}
