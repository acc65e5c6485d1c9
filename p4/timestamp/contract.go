// Package timestamp is the control-plane contract of the per-hop latency
// probe program (timestamp.p4, Tofino 1, TNA): the names of its table,
// actions and registers, the layout of the stamp its probes carry, and how
// per-hop latencies are read from a returned probe. It measures what Sella,
// Moore and Zilberman ("FEC Killed the Cut-Through Switch") compute: the
// latency and jitter FEC adds per hop, tens to hundreds of nanoseconds, with
// the switch's hardware clocks rather than a host's.
//
// The P4_16 source is compiled by a lab's Intel SDE (bf-p4c), not by this
// repository's build.
package timestamp

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Program is the program's name: bfrt.<Program>.pipe.<Control>.<name>.
const Program = "timestamp"

// Names the control plane uses.
const (
	// TableSnake sends a frame from its ingress port to the next port of the
	// snake; keyed by the ingress port.
	TableSnake = "SwitchIngress.snake"
	// ActionForward takes the egress port; ActionDrop ends the snake.
	ActionForward = "forward"
	ActionDrop    = "drop"
	// RegRxTs holds, per ingress port, the low 32 bits of the MAC ingress
	// timestamp of the last probe stamped there.
	RegRxTs = "SwitchIngress.reg_rx_ts"
	// RegTxTs holds, per egress port, the low 32 bits of the egress global
	// timestamp of the last probe stamped there.
	RegTxTs = "SwitchEgress.reg_tx_ts"
)

// Match keys and action parameters as bfrt_python spells them.
const (
	KeyIngressPort = "ingress_port"
	ParamPort      = "port"
)

// Stamp layout (timestamp.p4): after the Ethernet header with EtherType
// EtherType, a 4-byte header (16-bit sequence number, 8-bit hops stamped so
// far, 8-bit maximum) and MaxHops records of 8 bytes (32-bit MAC ingress
// timestamp, 32-bit egress timestamp, both the low bits of the switch's
// nanosecond clock).
const (
	// EtherType is IEEE Std 802's local experimental EtherType 1.
	EtherType   = 0x88B5
	HeaderBytes = 4
	RecordBytes = 8
	// MaxHops records fit a 64 B frame: 14 + 4 + 5*8 + 4 (FCS) = 62.
	MaxHops = 5
	// EthernetBytes is destination, source and EtherType.
	EthernetBytes = 14
	// StampBytes is the header and every record: what a probe's payload
	// must start with.
	StampBytes = HeaderBytes + MaxHops*RecordBytes
	// PortCount is the registers' and the snake table's size (TS_MAX_PORTS).
	PortCount = 512
)

// Record is one hop's timestamps (nanoseconds, low 32 bits).
type Record struct {
	RxTs, EgTs uint32
}

// Stamp is what a probe carries after its Ethernet header.
type Stamp struct {
	Seq     uint16
	Hops    uint8
	MaxHops uint8
	Records [MaxHops]Record
}

// NewStamp is a fresh probe's stamp that asks for hops stamps (1..MaxHops).
func NewStamp(seq uint16, hops int) (Stamp, error) {
	if hops < 1 || hops > MaxHops {
		return Stamp{}, fmt.Errorf("timestamp: %d hops, the probe has room for 1..%d", hops, MaxHops)
	}
	return Stamp{Seq: seq, MaxHops: uint8(hops)}, nil
}

// Marshal is the stamp as it goes after the Ethernet header.
func (s Stamp) Marshal() []byte {
	b := make([]byte, StampBytes)
	binary.BigEndian.PutUint16(b[0:], s.Seq)
	b[2], b[3] = s.Hops, s.MaxHops
	for i, r := range s.Records {
		o := HeaderBytes + i*RecordBytes
		binary.BigEndian.PutUint32(b[o:], r.RxTs)
		binary.BigEndian.PutUint32(b[o+4:], r.EgTs)
	}
	return b
}

// Unmarshal reads a stamp from the bytes after the Ethernet header.
func Unmarshal(b []byte) (Stamp, error) {
	if len(b) < StampBytes {
		return Stamp{}, fmt.Errorf("timestamp: stamp of %d bytes, want %d", len(b), StampBytes)
	}
	s := Stamp{Seq: binary.BigEndian.Uint16(b[0:]), Hops: b[2], MaxHops: b[3]}
	if s.MaxHops > MaxHops || s.Hops > s.MaxHops {
		return Stamp{}, fmt.Errorf("timestamp: %d of %d hops stamped, room for %d", s.Hops, s.MaxHops, MaxHops)
	}
	for i := range s.Records {
		o := HeaderBytes + i*RecordBytes
		s.Records[i] = Record{RxTs: binary.BigEndian.Uint32(b[o:]), EgTs: binary.BigEndian.Uint32(b[o+4:])}
	}
	return s, nil
}

// MinFrameBytes is the smallest probe frame (FCS included) that holds a stamp.
func MinFrameBytes() int { return EthernetBytes + StampBytes + 4 }

// since is b - a on the 32-bit nanosecond clock (it wraps every 4.29 s).
func since(a, b uint32) time.Duration { return time.Duration(b - a) }

// Hop is what one pass between two stamped ingresses took, on one clock (a
// snake on one switch, or switches with synchronized clocks).
type Hop struct {
	// Total is from ingress k to ingress k+1: the switch's pipeline and
	// queue, the egress MAC and PHY, the wire, the receiving PHY (FEC).
	Total time.Duration
	// Wire is from the egress timestamp of hop k to ingress k+1: the egress
	// MAC, both PHYs and the fibre.
	Wire time.Duration
}

// Hops are the per-hop latencies of a probe that came back with n stamps:
// n-1 hops between stamped ingresses.
func (s Stamp) Latencies() ([]Hop, error) {
	if s.Hops < 2 {
		return nil, fmt.Errorf("timestamp: probe %d has %d stamps, a hop needs two", s.Seq, s.Hops)
	}
	out := make([]Hop, 0, s.Hops-1)
	for k := 0; k+1 < int(s.Hops); k++ {
		a, b := s.Records[k], s.Records[k+1]
		out = append(out, Hop{Total: since(a.RxTs, b.RxTs), Wire: since(a.EgTs, b.RxTs)})
	}
	return out, nil
}
