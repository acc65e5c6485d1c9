// Package reactormodel is a model of a REACToR hybrid ToR (Liu et al.,
// "Circuit Switching Under the Radar with REACToR", NSDI 2014) in simulated
// time: its hosts, its optical circuit switch (OCS), its electrical packet
// switch (EPS) and its controller. It is pure (no I/O, no clock, no global
// state) and deterministic for a given seed; the recipes and the simulated
// lab run it.
//
// # What is modelled
//
// Hosts (§3.1). Every host has one traffic class per destination and a
// dedicated EPS class Q_P, each a FIFO queue of fluid bytes. Flows feed
// them: a bulk flow is TCP-like (the application always has data; at most
// a window of bytes is unacknowledged; the receiver returns one ACK per two
// segments through its own EPS class, §5.2: data on circuits, ACKs on the
// packet switch; ACKs that arrive free the window), a paced flow offers a
// constant wire rate (the prototype's pktgen sender, the offered demands of
// §5.4). A host's demand report is the occupancy of its classes
// ([Model.Report]).
//
// Pause and unpause (§3.4). The ToR starts and stops each class with
// 802.1Qbb PFC frames, and a frame takes effect after a delay drawn
// uniformly from the measured range: off 1,014 to 2,188 ns, on 1.2 to
// 1.3 us (Intel 82599). The ToR sends the pause [Params.PauseLead] (default
// the largest off delay) before a slot ends, so circuit traffic has stopped
// when the OCS reconfigures, and the unpause [Params.UnpauseLead] (default
// the least on delay) before the night budget ends, hiding that much of the
// delay as §3.4 suggests. A class unpaused while its circuit is dark has its
// traffic shunted to the EPS by the ToR's classifier. Classes that move
// between the EPS and circuits at a period boundary are paused and unpaused
// the same way.
//
// Class constraints (§3.2). Q_P is always unpaused. A class with a circuit
// in a period sends only during its circuits, never to the EPS; a class
// without one is remapped to the EPS for the period. The classes mapped to
// the EPS share the host's EPS rate max-min fairly, each under its own
// limit ([Model.SetEPSLimit]), so the limits in force sum to at most the
// EPS rate; a host's link carries its circuit traffic and its EPS traffic
// together, so the EPS gets what the circuit leaves of it.
//
// The ToR's downlinks and the rate limit (§3.3). Each downlink multiplexes
// the circuit into it (bufferless, so with priority) and the EPS's output
// queue for it, which drains at the EPS rate and at most what the circuit
// leaves of the port. §3.3's rule is followed as written: each time a
// period's configurations are computed, every circuit is rate-limited to
// the port rate less the EPS load estimated at its destination for that
// period, namely the demand the schedule leaves to the EPS for that
// destination plus what the EPS classes delivered there over the last
// period (ACKs, latency-sensitive traffic), at most the EPS rate. With a
// 10:1 OCS:EPS ratio the limits fall in the paper's 90-100% of the link.
//
// The OCS (§3.2, §4). It plays a schedule of sched.Schedule (from
// internal/sched) period after period: each slot is a night of
// the schedule's Delta followed by Duration of light. The physical gap
// within each night is drawn from [GapLaw] (default Mordia's: mean 12 us,
// at most about 15 us, Fig. 5), which Delta must cover; the circuit lights
// at the end of the gap and goes dark at the end of the slot.
//
// The controller (§3.2, §5.2). [Params.ScheduleLead] before each period
// boundary (default 100 us) it reads the demand (the hosts' reports, or an
// oracle of the offered load as the prototype and §5.4 used), computes the
// next period's schedule with a [Scheduler] (default: Solstice, keeping the
// fewest configurations that leave the EPS only what it can carry, all of
// them when there is no EPS), checks it with sched.Validate, and computes
// the rate limits; the new schedule starts at the boundary. A workload that
// changes mid-period is therefore followed at the next boundary if it
// changed before the decision, one period later otherwise.
//
// The fluid. Time advances in steps that end at every slot, night budget,
// decision, period and flow event (and, with bulk flows, at most every
// [Params.MaxStep], default 20 us, at which the ACK clock is sampled).
// Within a step each class is served piecewise as its circuit windows
// (unpause to pause, as the PFC delays place them), its slot's light and
// its EPS mapping begin and end; over each piece the rate and the arrivals
// are constant, so a queue serves exactly min(rate x time, backlog +
// arrivals), shared among its flows in proportion to what each has. Bytes
// served over a lit circuit reach the destination at once; bytes sent to
// the EPS join its output queue for the destination. Goodput is the payload
// part of what arrives (TCP/IPv4 with timestamps or UDP/IPv4 in
// 1500-byte packets over Ethernet, [Framing]). Nothing states a result:
// goodput, duty cycle and the hybrid's advantage come out of these
// mechanisms.
//
// # What comes out
//
// [Result]: per flow goodput and byte counts (over circuits, through the
// EPS, shunted, dropped); per slot and port a [SlotRecord] (period, slot,
// source, destination, start, end, gap, bytes, the PFC frames and when they
// took effect, the rate limit); the schedule of every period; every night;
// the duty cycle (port-time open to circuit traffic over port-time), the
// circuit load, the total goodput and the goodput fraction of the offered
// load, and the gap's mean and maximum. [Hybrid54] runs one point of §5.4's
// Figs. 10 and 11 on a hybrid or a pure circuit ToR.
//
// For §5.2's all-to-all (8 hosts at 10 Gb/s, 7 slots of 214.3 us with a
// 30 us night per 1.5 ms) the model gives a duty cycle of 86% and 7.87 Gb/s
// of TCP goodput per host; the prototype measured 8.1 Gb/s. The difference
// is the model's following §3.3 literally: it reserves room at every port
// for the ACKs it sends through the EPS (one 90-byte ACK per two full
// frames, 2.4% of the link), and the PFC delays cost 0.35%. Receivers that
// coalesce ACKs (GRO/LRO) need less room ([Framing.AckEvery]).
//
// # Parameters and their sources
//
//   - Prototype ([Defaults]): 8 hosts at 10 Gb/s, a 1 Gb/s EPS (§4: 10:1),
//     W = 1.5 ms and Delta = 30 us (§5.2), configurations of at least
//     160 us including the night (§4).
//   - §5.4 ([Section54]): 64 hosts at 100 Gb/s, an EPS of 10 or 20 Gb/s
//     (none for the pure circuit ToR), W = 3 ms, Delta = 20 us,
//     configurations of at least 40 us including it (at most 75).
//   - Reconfiguration gap: Mordia, mean about 12 us, 14.84 us the largest
//     observed (§4, Fig. 5). [Switching] is its mechanism, circuit by
//     circuit (mirror settle, then the receiver's CDR and PCS relock), which
//     the simulated microsecond switch plays; the model itself draws from a
//     [GapLaw] (traffic does not depend on it).
//   - PFC delays: off 1,014-2,188 ns, on 1.2-1.3 us (§3.4); used at
//     100 Gb/s too, for want of a measurement there.
//   - Bulk window: 4 MiB, Linux's largest autotuned send buffer
//     (net.ipv4.tcp_wmem); delayed ACKs every 2 segments (RFC 1122, RFC
//     5681); ACKs of 90 bytes on the wire with the timestamp option (RFC
//     7323).
//   - Decision lead: 100 us, our choice: hosts act on a schedule within
//     15 us of receiving it (§4) and the switch loads it just before the
//     period (§5.2).
//
// # What is not modelled
//
//   - Packets: the model is a fluid at flow level. PFC's dependence on the
//     frame in flight is folded into the uniform delay draw; per-packet
//     latency, reordering and jitter are not produced.
//   - TCP congestion control: a bulk flow is window-limited and ACK-clocked
//     but has no slow start, no congestion window and no timeouts; a byte
//     the EPS drops is sent again at once. §5.1 found that pausing data
//     does not disturb TCP, which is what makes this adequate for bulk
//     transfers on circuits.
//   - Propagation and processing delay: zero on circuits and through the
//     EPS (only the EPS's queueing delays anything); the schedule reaches
//     every host in time.
//   - The EPS as a switch fabric: it is one output queue per ToR port,
//     with an optional buffer limit ([Params.EPSBuffer]) and no uplink
//     contention; traffic shunted from a dark circuit joins it whole.
//   - Several ToRs, uplink synchronisation between them, and the NIC's own
//     buffer limits: one ToR, and hosts buffer without bound (§3.1's DRAM).
//   - Demand estimation beyond queue occupancy and the oracle; with
//     reported demand a bulk flow that stops still has its queued window
//     to send, which keeps a circuit until it drains.
//   - Rack-local traffic through the ToR's own fabric (every destination
//     is reached over the OCS or the EPS).
package reactormodel
