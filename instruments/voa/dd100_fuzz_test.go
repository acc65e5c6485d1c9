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

// FuzzDD100Reply: whatever an OZ Optics DD-100 answers to A? (the bytes
// fuzzed, then the port closed), the driver, on a TCP line on loopback,
// returns an error or the attenuation the reply states, a finite number;
// a reply it cannot read is an error, never a guess, and never a hang.
// The greeting (E0, CD) is answered as the device does.
func FuzzDD100Reply(f *testing.F) {
	for _, s := range []string{
		"Atten:12.50(dB)\r\nDone\r\n\r\n", "Done\r\n", "Error-2\r\nDone\r\n", "Atten:NaN(dB)\r\nDone\r\n",
		"Atten:1e400(dB)\r\nDone\r\n", "Atten:(dB)\r\nDone\r\n", "A?\r\nAtten:3(dB)\r\nDone\r\n", "Pos:100\r\nDone\r\n",
		"Atten:-0.00(dB)\r\nAtten:5(dB)\r\nDone\r\n", "\x00\xff\r\n", "", "Atten:12.5",
	} {
		f.Add([]byte(s))
	}
	addr, reply := scriptedLine(f, serveDD100Script)
	ok := []byte("Atten:0.00(dB)\r\nDone\r\n\r\n")
	reply.Store(&ok)
	o, err := voa.OpenOZOptics(context.Background(), "tcp://"+addr, voa.Options{Timeout: 5 * time.Second})
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
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("attenuation %v from %q: want an error", v, body)
		}
		if !strings.Contains(string(body), "Atten:") || !strings.Contains(string(body), "Done") {
			t.Fatalf("attenuation %v from %q, which states none", v, body)
		}
	})
}

// serveDD100Script answers a DD-100's greeting as the device does and A?
// with the current reply, then hangs up.
func serveDD100Script(c net.Conn, reply *atomic.Pointer[[]byte]) {
	defer c.Close()
	rd := bufio.NewReader(c)
	for {
		cmd, err := rd.ReadString('\r')
		if err != nil {
			return
		}
		switch strings.TrimSpace(cmd) {
		case "E0":
			c.Write([]byte("Done\r\n\r\n"))
		case "CD":
			c.Write([]byte("DD-100-MC\r\nVER:3.10\r\nS/N:OZ0001\r\nMAX ATTEN:55.00\r\nDone\r\n\r\n"))
		case "A?":
			c.Write(*reply.Load())
			return
		default:
			c.Write([]byte("Error-2\r\nDone\r\n\r\n"))
		}
	}
}

// scriptedLine listens on loopback and answers every connection with
// serve, which sends the reply stored in the returned pointer: the line
// both instruments' fuzz targets drive their driver over.
func scriptedLine(f *testing.F, serve func(net.Conn, *atomic.Pointer[[]byte])) (string, *atomic.Pointer[[]byte]) {
	reply := new(atomic.Pointer[[]byte])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c, reply)
		}
	}()
	return ln.Addr().String(), reply
}
