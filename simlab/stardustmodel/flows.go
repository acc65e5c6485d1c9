package stardustmodel

import (
	"fmt"

	"testbed/simlab/internal/fifo"
)

// Flows: a given amount of data from one FA to one destination port,
// offered at once (an incast reply, a permutation's long flow), beside or
// instead of the Poisson load (Load 0 turns that off). A flow's packets
// join the VOQ of its source FA and destination port and take credits
// like any other; the VOQ is the flow's, so one flow at a time per FA and
// destination port.

type flowTable struct {
	byVOQ map[int]int // src FA * ports + port -> flow index
	f     []flowRec
}

type flowRec struct {
	src, port int
	bytes     int64
	arrived   int64
	done      float64 // slot its last byte leaves the egress port, -1 not yet
}

// AddFlow offers bytes from FA src to global destination port, as packets
// of pktBytes (the last one shorter), in priority prio, and returns the
// flow's number.
func (m *Model) AddFlow(src, port, prio int, bytes int64, pktBytes int) (int, error) {
	c := m.c
	ports := c.FAs * c.PortsPerFA
	switch {
	case src < 0 || src >= c.FAs || port < 0 || port >= ports || port/c.PortsPerFA == src:
		return 0, fmt.Errorf("flow FA %d to port %d: expected another FA's port of 0..%d", src, port, ports-1)
	case prio < 0 || prio >= c.Priorities || bytes <= 0 || pktBytes <= 0:
		return 0, fmt.Errorf("flow priority %d, %d B in %d B packets: expected a priority below %d and positive sizes", prio, bytes, pktBytes, c.Priorities)
	}
	if m.flows == nil {
		m.flows = &flowTable{byVOQ: map[int]int{}}
	}
	key := src*ports + port
	if i, ok := m.flows.byVOQ[key]; ok && m.flows.f[i].done < 0 {
		return 0, fmt.Errorf("flow FA %d to port %d: flow %d still holds that VOQ", src, port, i)
	}
	id := len(m.flows.f)
	m.flows.f = append(m.flows.f, flowRec{src: src, port: port, bytes: bytes, done: -1})
	m.flows.byVOQ[key] = id
	vi := port*c.Priorities + prio
	v := &m.voqs[src][vi]
	for left := bytes; left > 0; left -= int64(pktBytes) {
		b := min(left, int64(pktBytes))
		v.pkts = append(fifo.RoomFor(v.pkts, &v.pktsArr, 16), int32(b))
		v.bytes += b
	}
	m.S.BytesOffered += bytes
	m.S.PrioOffered[prio] += bytes
	m.request(src, vi)
	return id, nil
}

// flowArrived counts a cell's data for its flow; when the flow's last
// byte reaches the destination FA it leaves the egress port behind what
// the port's buffer already holds (a FIFO draining at the port rate).
func (m *Model) flowArrived(x cell) {
	ports := m.c.FAs * m.c.PortsPerFA
	i, ok := m.flows.byVOQ[int(x.srcFA)*ports+int(x.port)]
	if !ok {
		return
	}
	f := &m.flows.f[i]
	if f.done >= 0 {
		return
	}
	f.arrived += int64(x.bytes)
	if f.arrived >= f.bytes {
		// The egress buffer already includes this cell.
		f.done = float64(m.now) + m.scheds[x.port].egress/m.portBytes
	}
}

// FlowDelivered is the data of flow id that reached its destination FA.
func (m *Model) FlowDelivered(id int) int64 { return m.flows.f[id].arrived }

// FlowDone is the slot (fractional) at which flow id's last byte left
// the destination port, and whether it has.
func (m *Model) FlowDone(id int) (float64, bool) {
	f := m.flows.f[id]
	return f.done, f.done >= 0
}

// VOQBytes is the data waiting in FA fa's VOQs, all destinations: where
// an incast's excess sits (§5.4).
func (m *Model) VOQBytes(fa int) int64 {
	var n int64
	for _, v := range m.voqs[fa] {
		n += v.bytes
	}
	return n
}
