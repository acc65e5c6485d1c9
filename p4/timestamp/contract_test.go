package timestamp

import (
	"testing"
	"time"
)

func TestStampRoundTrip(t *testing.T) {
	s, err := NewStamp(0xbeef, 3)
	if err != nil {
		t.Fatal(err)
	}
	s.Hops = 3
	s.Records[0] = Record{RxTs: 1000, EgTs: 1500}
	s.Records[1] = Record{RxTs: 2300, EgTs: 2900}
	s.Records[2] = Record{RxTs: 3650}
	b := s.Marshal()
	if len(b) != StampBytes || b[0] != 0xbe || b[1] != 0xef || b[2] != 3 || b[3] != 3 {
		t.Fatalf("marshalled % x", b[:4])
	}
	// Big-endian, as the deparser emits: rx_ts of record 1 at 4+8.
	if b[12] != 0 || b[13] != 0 || b[14] != 0x08 || b[15] != 0xfc {
		t.Errorf("record 1 rx_ts bytes % x, want 00 00 08 fc", b[12:16])
	}
	got, err := Unmarshal(b)
	if err != nil || got != s {
		t.Fatalf("round trip %+v, %v", got, err)
	}
	hops, err := got.Latencies()
	if err != nil {
		t.Fatal(err)
	}
	want := []Hop{{Total: 1300, Wire: 800}, {Total: 1350, Wire: 750}}
	if len(hops) != 2 || hops[0] != want[0] || hops[1] != want[1] {
		t.Errorf("hops %+v, want %+v", hops, want)
	}
}

func TestLatencyAcrossClockWrap(t *testing.T) {
	s := Stamp{Hops: 2, MaxHops: 2}
	s.Records[0] = Record{RxTs: 0xffffff00, EgTs: 0xffffff80}
	s.Records[1] = Record{RxTs: 0x00000100}
	hops, err := s.Latencies()
	if err != nil {
		t.Fatal(err)
	}
	if hops[0].Total != 512*time.Nanosecond || hops[0].Wire != 384*time.Nanosecond {
		t.Errorf("across the wrap: %+v", hops[0])
	}
}

func TestStampLimits(t *testing.T) {
	if _, err := NewStamp(1, 0); err == nil {
		t.Error("0 hops accepted")
	}
	if _, err := NewStamp(1, MaxHops+1); err == nil {
		t.Error("more hops than records accepted")
	}
	if _, err := Unmarshal(make([]byte, StampBytes-1)); err == nil {
		t.Error("short stamp accepted")
	}
	b := Stamp{Hops: 4, MaxHops: 3}.Marshal()
	if _, err := Unmarshal(b); err == nil {
		t.Error("more stamps than asked for accepted")
	}
	if _, err := (Stamp{Hops: 1, MaxHops: 1}).Latencies(); err == nil {
		t.Error("one stamp gave a hop")
	}
	// The smallest Ethernet frame carries a full stamp (IEEE 802.3 clause 3.2.7).
	if MinFrameBytes() > 64 {
		t.Errorf("a probe needs %d bytes, more than a minimum frame", MinFrameBytes())
	}
}
