package fctmodel

import (
	"testing"

	"testbed/simlab/lgmodel"
)

// 24,387 B flows (the most frequent multi-packet size, §4.3) at 1e-3: the
// non-blocking mode delivers the segments after a corrupted one before its
// copy, the ordered mode never does. What the transports make of it is
// measured, not assumed: TCP receives out of order and, until it has seen
// reordering once, RACK retransmits the hole needlessly; RDMA's responder
// drops what comes out of sequence and NAKs, and the requester goes back.
func TestNonBlockingReordersMultiPacketFlows(t *testing.T) {
	n := trials(300_000)
	for _, tr := range []Transport{TCP, RDMA} {
		base := summarize(run(t, config(t, tr, lgmodel.Ordered, 0, 24387), 10, 1)).fct[0]
		for _, mode := range []lgmodel.Mode{lgmodel.Ordered, lgmodel.NonBlocking} {
			ts := run(t, config(t, tr, mode, 1e-3, 24387), n, 7)
			s := summarize(ts)
			var repaired, retxTrials int
			for _, x := range ts {
				if x.LinkCopies > 0 {
					repaired++
				}
				if x.Retransmitted() {
					retxTrials++
				}
			}
			t.Logf("%s 24387 B %s 1e-3: lossless %v p50 %v p99 %v p99.9 %v p99.99 %v max %v | %d trials repaired by the link; "+
				"the receiver got %d out of order, %d twice; %d trials retransmitted (%d segments/packets, %d recoveries or NAKs, %d timeouts)",
				tr, mode, base, s.p(.5), s.p(.99), s.p(.999), s.p(.9999), s.fct[len(s.fct)-1],
				repaired, s.reord, s.spur, retxTrials, s.retrans, s.recov, s.timeouts)
			// 17 (TCP) or 24 (RDMA) frames a trial: about 1.7-2.4% repaired.
			if repaired == 0 || s.lost != 0 {
				t.Errorf("%s %s: %d repairs, %d frames lost for good", tr, mode, repaired, s.lost)
			}
			switch mode {
			case lgmodel.Ordered:
				if s.reord != 0 || s.spur != 0 || s.retrans != 0 {
					t.Errorf("%s ordered: the transport saw reordering or retransmitted: %+v", tr, s)
				}
			case lgmodel.NonBlocking:
				if s.reord < repaired {
					t.Errorf("%s non-blocking: %d out-of-order arrivals for %d repairs", tr, s.reord, repaired)
				}
				if s.retrans == 0 || s.spur == 0 {
					t.Errorf("%s non-blocking: no needless retransmission: %+v", tr, s)
				}
			}
			if s.p(.5) != base {
				t.Errorf("%s %s: p50 %v, want %v", tr, mode, s.p(.5), base)
			}
		}
	}
}

// TCP learns: the first reorderings cost needless fast retransmits (three
// SACKed segments beyond the hole and no reordering seen yet: no window),
// until a hole is filled by its original; after that RACK waits min_rtt/4,
// longer than the link's repair, and the needless ones stop.
func TestTCPStopsRetransmittingOnceItHasSeenReordering(t *testing.T) {
	m, err := New(config(t, TCP, lgmodel.NonBlocking, 1e-3, 24387), newRand(8))
	if err != nil {
		t.Fatal(err)
	}
	last, repairs := -1, 0
	for i := 0; i < trials(100_000); i++ {
		x := m.Trial()
		if x.LinkCopies > 0 {
			repairs++
		}
		if x.Retransmitted() {
			last = repairs
		}
	}
	if !m.tcp[0].v.reordSeen || m.tcp[0].v.reordering <= int64(m.c.TCP.Reordering) {
		t.Errorf("the client has not learnt the reordering: seen %v, degree %d", m.tcp[0].v.reordSeen, m.tcp[0].v.reordering)
	}
	if last < 0 || repairs-last < repairs/2 {
		t.Errorf("needless retransmissions went on until repair %d of %d", last, repairs)
	}
	t.Logf("the last needless retransmission came with repair %d of %d; reordering degree learnt: %d segments",
		last, repairs, m.tcp[0].v.reordering)
}
