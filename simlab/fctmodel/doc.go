// Package fctmodel is the simulated lab's model of flow completion times:
// a client and a server host running small RPCs (TCP) or RDMA WRITEs over
// a path whose middle link corrupts frames, with LinkGuardian off, ordered
// or non-blocking on it (LinkGuardian, SIGCOMM'23, §4.3 and Fig. 10). It is
// pure and deterministic: simulated time, one seeded random source, no I/O.
// The simulated hosts run the hostagent's FCT measurement on it.
//
// Nothing in it restates a result. The FCT distribution comes out of the
// mechanisms: frames serialized and carried hop by hop, each frame's
// corruption drawn on the link, LinkGuardian's protocol repairing or not
// (the same packet-level model as the switch emulator's, simlab/lgmodel,
// driven frame by frame), and the transports' own loss recovery.
//
// # The path
//
//	client NIC -> cable -> sender switch -> corrupting link -> receiver switch -> cable -> server NIC
//	client NIC <- cable <- sender switch <-  reverse link   <- receiver switch <- cable <- server NIC
//
// Each host's NIC and each switch port toward a host serializes frames in
// order at HostBps (100G, §4.3: all links at 100G); each cable is 2 m
// (10 ns). The link between the switches is an lgmodel run in offered mode
// (lgmodel.NewOffered): it adds the LinkGuardian header when protection is
// on, serializes at the link's rate, one switch pass (1 us, Tofino's
// port-to-port latency) and the fibre; corrupts each frame with its
// probability; and, when protected, detects the loss by the gap the next
// frame or dummy reveals, sends N copies (Eq. 2: N = 2 at 1e-3 for a 1e-8
// target), holds later frames in the reorder buffer (ordered) or lets them
// pass (non-blocking), and gives up a hole after ackNoTimeout (7 us at
// 100G, §4). The repair takes about 5.2 us for a small frame at 100G, under
// the 5.5 us maximum the paper measured. The receiving switch adds its own
// pass. Forward is the client-to-server direction. Corruption is usually
// one-directional (91.8% of corrupting links, §3), and the paper corrupts
// the link from its LinkGuardian sender sw2 to its receiver sw6 with a VOA
// (§4): Defaults leaves Reverse clean and unprotected; both directions
// take any mode and loss.
//
// A frame's corruption probability is Link.Loss for every frame (as the
// loss-emulation table drops), or, with Link.LossBytes, the loss of a
// frame of that size scaled to each frame's size as independent bit errors
// (as a fibre without FEC corrupts; the paper measures the loss with MTU
// frames), or whatever Link.FrameLoss says (the simulated fibre's physics).
// The choice matters: at a loss of 1e-3 for MTU frames, bit errors corrupt
// a 213-byte request frame with only 1.4e-4.
//
// # Hosts
//
// Host delays are parameters (HostDelays). For TCP, the kernel stack:
// 1 us from the application's write to the stack, 2 us from the stack to
// the wire, 8 us from the wire to the stack (interrupt moderation, NAPI,
// TCP), 2 us from the stack to the application's read returning. They are
// set so that the TCP round trip the stack measures is the ~30 us the
// paper reports for its hosts (§4: "The network RTT for a TCP sender is
// ~30 us"; here 27 us, the 143 B FCT 30 us). For RDMA, the NIC: 0.6 us
// from the post to the wire, 0.3 us from the wire to the payload placed
// and the ACK decided, 0.2 us for the completion to be polled (a 143 B
// WRITE completes in 5.5 us across the two switches).
//
// # Trials
//
// A trial is one request and its answer on a persistent connection,
// closed loop (the next request Think after the answer): its FCT runs from
// the request's write (the WRITE's post) to the application having the
// answer's last byte (the WRITE's completion, polled). The connection's
// state carries over from trial to trial: the RTT estimate, RTO, window,
// reordering degree, delayed-ACK and timer state, sequence numbers.
// Warmup trials (10) settle it before the first one reported.
//
// # TCP
//
// Linux 5.4 (the paper's kernel, §4), DCTCP, SACK, RACK-TLP, with the
// route's rto_min of 1 ms (§4). The code follows the kernel's functions,
// named in comments: segmentation at the MSS (1448: a 1500 B MTU with
// timestamps), an initial window of 10 (RFC 6928), slow start and
// congestion avoidance only while cwnd-limited (tcp_is_cwnd_limited);
// the RTT estimator (tcp_rtt_estimator) in microseconds with rttvar at
// least rto_min, RTO = srtt + rttvar rounded up to jiffies (HZ 1000, the
// paper's lowlatency kernel) and doubled at each timeout up to 120 s;
// kernel timers fire on jiffy ticks, so a 2-jiffy RTO fires 1 to 2 ms
// after it is armed, depending on where the trial falls between ticks;
// the tail loss probe (tcp_schedule_loss_probe: 2 srtt plus TCP_RTO_MIN,
// the constant 200 ms, with one packet out, plus 2 jiffies otherwise,
// never after the RTO would fire; so with rto_min 1 ms a lost single
// segment is probed when its RTO would fire, and the probe is what repairs
// it); RACK loss detection (tcp_rack_detect_loss) with its reordering
// window (min_rtt/4, or none while no reordering has been seen and 3 or
// more segments are SACKed beyond a hole, which is fast retransmit on
// three duplicate ACKs), its timer (jiffies, plus 2), and the window
// widened by DSACKs; the reordering degree learnt when a hole is filled by
// an original (tcp_check_sack_reordering); fast recovery with proportional
// rate reduction (tcp_cwnd_reduction); DCTCP's halving on loss, its alpha
// (a parameter, 0 without ECN marks) on a reduction after a loss probe
// repaired a tail; RTO recovery (tcp_enter_loss: cwnd 1, the rest of the
// window marked lost unless RACK says it was sent too recently);
// undoing a reduction when DSACKs show every retransmission was needless.
// The receiver ACKs every second full segment at once, out-of-order data,
// a filled hole and duplicates (with a DSACK) at once, the rest after the
// delayed-ACK timer (40 ms) unless data going back carries the ACK first,
// as an RPC's answer does (ping-pong mode); DelayedAck off ACKs every
// segment at once. It sends up to three SACK blocks, the newest first.
//
// So a corrupted single-packet request is repaired by the loss probe at
// the RTO's tick, 1-2 ms later, and the server, whose answer was not
// acknowledged either (the ACK rides on the request), probes its answer
// too: the client gets it twice and reports a DSACK. With LinkGuardian the
// request arrives 5 us late and nothing else happens. A corrupted segment
// in a 24,387 B request is repaired by RACK within a round trip; with the
// non-blocking mode the segments after it arrive before its copy: the
// receiver ACKs them out of order at once, and while the connection has
// not yet seen reordering, three SACKed segments make RACK retransmit the
// hole at once, needlessly (the copy is already there), halving cwnd
// until the DSACK undoes it. Once an original fills a hole the sender
// learns the reordering and waits min_rtt/4 (7 us) instead: longer than
// the repair, so the needless retransmissions stop. The ordered mode hands
// the receiver everything in order, later.
//
// # RDMA
//
// RoCEv2 reliable connection (InfiniBand Architecture Specification,
// vol. 1, ch. 9), as the NIC does it: a WRITE in packets of the path MTU
// (1024 B for a 1500 B Ethernet MTU), consecutive PSNs, the last one asking
// for an ACK (and one every AckEvery packets, 0 by default); the responder
// takes packets in PSN order only, answers the first out-of-sequence packet
// with a NAK and drops the rest until the expected one comes, and ACKs
// duplicates that ask for it; a NAK or the transport timer (local ACK
// timeout 4.096 us * 2^TimeoutExp; 8 gives 1.05 ms, the ~1 ms the paper
// found, §4, and what the mlx5 driver sets for its own steering QPs)
// sends everything from the oldest unacknowledged packet again (go-back-N).
// The trial ends at the WRITE's completion, or with ResponseBytes at the
// server's WRITE back landing (perftest's ib_write_lat ping-pong).
//
// # Speed
//
// Most trials see no corruption at all. At the start of a trial with
// nothing in flight, both ends' state is put in a canonical form (times
// from now, sequence numbers from the oldest unacknowledged byte, values
// that can no longer matter cleared) and looked up; the first time a state
// is seen, its trial is run once with no frame corrupted and what it takes
// is kept. A trial from a known state is lossless with the product of its
// frames' chances to get through, and is then applied at once; otherwise
// the first corrupted frame is drawn given that one is, and the trial is
// simulated frame by frame. This is exact (Model.Trial says why); a state
// whose lossless trial would fire a timer (and so depend on the tick) is
// never kept. 300,000 trials take well under a second; Config.Step turns
// the skip-ahead off, and a test checks that both give the same
// distribution. At a clean trial start quiet links restart afresh: only
// the phase of the idle line's dummies (under 7 ns) is forgotten.
//
// # Not modelled
//
// Connection teardown (FIN), the SYN retry limit (tcp_syn_retries), and
// a connection's setup apart from Config.PerFlow's handshake (handshake.go:
// the artifact's iperf makes a connection per flow; without PerFlow the
// connection persists, as the hostagent's closed loop does); TCP timestamps (no Eifel undo, no RTT from them: a
// retransmitted segment gives no RTT sample); F-RTO; TSO/GRO batching,
// pacing and TSO deferral; the receive window; cwnd validation after idle
// or while application-limited (tcp_cwnd_application_limited,
// tcp_slow_start_after_idle: trials are back to back); the min_rtt
// filter's 5-minute window (here the minimum ever); the timer wheel's
// coarser levels (timeouts of 64 ms and more fire a little later in Linux);
// ECN and queues (no cross traffic: DCTCP's alpha is a constant); the RDMA
// retry limit (retries go on), DCQCN and NIC-internal delays in reacting
// to a NAK; bursts of corruption (each frame is corrupted independently);
// CPU contention and scheduling jitter in the hosts (their delays are
// constants; HostDelays.RxCoalesce, off by default, adds the NIC's
// interrupt-moderation wait to each trial, uniform over the period).
package fctmodel
