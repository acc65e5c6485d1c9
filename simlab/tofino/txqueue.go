package tofino

// The LinkGuardian sender's Tx buffer queue (lg.RecircPort,
// lg.QueueTxBuffer) as the courier's cadence fills it is the model's
// accounting (lgmodel Sim.TxQueue), which runs behind the model's clock
// and is brought to it only when asked. The switch asks it when the queue
// is read (tm.queue, opTMQueue: the only reader of a switch's queues), or
// when another reading is to be tracked in the same queue, not at every
// catch-up (every settleSpan of the switch's clock), where nobody reads
// it: at 10^8 frames those asks were 0.2% of the model's instructions at
// 100G and 1.8% at 25G non-blocking (lgmodel's BenchmarkSwitchSlices*
// against BenchmarkSwitchSlicesTxQueue*).
//
// That answers as asking at every catch-up did. A segment's model moves
// only under the dataplane's lock and is accounted (addTraffic) every
// time it moves, so the model a queue waits to ask stands where its last
// accounting left it: asked later, it gives what it gave then (the
// accounting gives the same for any slicing of its time). Its watermark
// never falls and is at least its depth, so the last reading of a model
// gives the queue the watermark all its readings since the last read
// did, and its depth; readings of two models (a segment ended and the
// next, two runs from one switch) are tracked in the order they were
// made, the waiting one first when another comes.
//
// Lock order: the dataplane's (Dataplane.mu) before a switch's
// (Tofino.mu), as addTraffic takes them; a model is asked with both held.

// txQueueModel is what a queue asks for the Tx buffer queue's depth and
// watermark: a segment's model with the courier's accounting.
type txQueueModel interface {
	TxQueue() (now, watermark int64, ok bool)
}

// track puts a reading into the queue: its depth now, and a watermark
// that the queue's own does not fall below.
func (q *simQueue) track(usage, mark int64) {
	q.usage = usage
	q.watermark = max(q.watermark, mark, usage)
}

// readLater notes that m's Tx buffer queue was accounted: the queue asks
// it when it is read. A model already waiting is asked first. With the
// dataplane's lock and the switch's held.
func (q *simQueue) readLater(m txQueueModel) {
	if q.later != nil && q.later != m {
		q.catchUp()
	}
	q.later = m
}

// catchUp asks the model waiting to be read, if any. With the dataplane's
// lock and the switch's held.
func (q *simQueue) catchUp() {
	if q.later == nil {
		return
	}
	now, mark, _ := q.later.TxQueue()
	q.later = nil
	q.track(now, mark)
}

// queue is the switch's queue (port, qid), made when first used. With
// t.mu held.
func (t *Tofino) queue(port, qid int) *simQueue {
	k := [2]int{port, qid}
	q := t.queues[k]
	if q == nil {
		q = &simQueue{}
		t.queues[k] = q
	}
	return q
}

// courierModel is a segment's model as addTraffic sees it: whether its
// Tx buffer queue is the courier's accounting, and asking it.
type courierModel interface {
	txQueueModel
	HasTxQueue() bool
}
