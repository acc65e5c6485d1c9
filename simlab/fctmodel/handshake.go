package fctmodel

// A new connection per flow (Config.PerFlow), as the LinkGuardian
// artifact's FCT experiment runs one (iperf -c ... -n 143: connect, send,
// close; switch_impl/expt_scripts/fct_expt_tcp/run_expt.sh). The
// three-way handshake follows Linux 5.4: the SYN and the SYN-ACK are
// retransmitted by their own timers from TCP_TIMEOUT_INIT (1 s, RFC 6298
// §2.1) doubling each time (tcp_retransmit_timer on a SYN_SENT socket,
// inet_csk_reqsk_queue's request-socket timer for the SYN-ACK). The
// SYN/SYN-ACK round trip is the connection's first RTT sample
// (tcp_ack_update_rtt from tcp_clean_rtx_queue) unless the SYN was sent
// again (Karn: no sample from a retransmitted segment); then
// tcp_init_metrics, with no cached metrics (tcp_no_metrics_save=1),
// falls back to an RTO of TCP_TIMEOUT_FALLBACK (3 s, RFC 6298 §5.7).
// More than one SYN retransmission starts the window at one segment
// (tcp_init_transfer, RFC 5681 §3.1). The handshake's last ACK needs
// no timer: the first data segment carries it and completes the server's
// request socket too (tcp_check_req).

// connect is the client's connect(): the SYN goes out and its timer runs.
func (e *tcpEP) connect() {
	v := &e.v
	v.conn = connSynSent
	v.synSent = e.now()
	e.sendHandshake(pkSYN)
	e.resetTimer(tmSYN, e.m.usToJiffies(e.m.c.TCP.RTOInit.Microseconds()))
}

// sendHandshake sends a SYN or a SYN-ACK (no data, no SACK blocks).
func (e *tcpEP) sendHandshake(kind uint8) {
	p := packet{from: uint8(e.id), syn: kind, bytes: max(minFrameBytes, e.m.c.TCP.SynBytes)}
	e.m.xmit(p, e.now()+dps(e.m.c.Host.TxStack))
}

// handshake handles p while the connection is being set up; it reports
// whether p was used up.
func (e *tcpEP) handshake(p *packet) bool {
	v := &e.v
	c := &e.m.c.TCP
	switch {
	case !v.isClient && p.syn == pkSYN:
		if v.conn == connListen || v.conn == connSynRcvd {
			// A SYN, or the same SYN again: (re)send the SYN-ACK
			// (tcp_conn_request; a duplicate makes inet_rtx_syn_ack).
			first := v.conn == connListen
			v.conn = connSynRcvd
			e.sendHandshake(pkSYNACK)
			if first {
				e.resetTimer(tmSYN, e.m.usToJiffies(c.RTOInit.Microseconds()))
			}
		}
		return true
	case !v.isClient && v.conn == connSynRcvd:
		// The handshake's ACK, or the first data carrying it.
		v.conn = connEstablished
		e.clearTimer()
		return p.end <= p.seq
	case v.isClient && p.syn == pkSYNACK:
		if v.conn != connSynSent {
			e.sendAck() // a SYN-ACK again: our ACK was lost
			return true
		}
		v.conn = connEstablished
		e.clearTimer()
		if v.synRetries == 0 {
			e.rttEstimator(max(1, usSince(v.synSent, e.now())))
		} else {
			fallback := e.m.usToJiffies(3_000_000) // TCP_TIMEOUT_FALLBACK
			v.rttvar = e.m.jiffiesToUS(fallback)
			v.mdev, v.mdevMax = v.rttvar, v.rttvar
			v.rto = fallback
			if v.synRetries > 1 {
				v.cwnd = 1
			}
		}
		e.sendAck()
		// connect() returns and the application writes the flow.
		h := &e.m.c.Host
		e.m.at(e.now()+dps(h.Wake)+dps(h.Syscall), evApp, uint8(e.id), appWrite, 0)
		return true
	case p.syn != 0:
		return true // a stray handshake packet on an established end
	}
	return false
}

// synTimer sends the SYN (client) or the SYN-ACK (server) again, the
// timeout doubling each time.
func (e *tcpEP) synTimer() {
	v := &e.v
	kind := pkSYN
	switch {
	case v.isClient && v.conn == connSynSent:
	case !v.isClient && v.conn == connSynRcvd:
		kind = pkSYNACK
	default:
		return
	}
	v.synRetries++
	e.cnt.retrans++
	e.cnt.synRetrans++
	e.cnt.timeouts++
	e.sendHandshake(kind)
	n := e.m.usToJiffies(e.m.c.TCP.RTOInit.Microseconds()) << min(v.synRetries, 20)
	e.resetTimer(tmSYN, n)
}

// closeAfterFlow is the server's application at the end of a one-way
// flow: the client closed after its write (iperf -n), so the flow's last
// segment came with its FIN (tcp_send_fin piggybacks it on a segment not
// yet sent, or sends it right after); reading it, the application sees
// the end of the stream and closes, and the FIN that close() sends
// carries the ACK still owed (tcp_fin put the socket in ping-pong mode,
// so no quick ACK went out for the last segment once the quick ACKs of
// the connection's start were used up). Not modelled: the FINs' own
// sequence numbers and their loss (the owed ACK is what fct1 waits for).
func (e *tcpEP) closeAfterFlow() {
	if e.v.ackPending {
		e.sendAck()
	}
}

// newConnection replaces the connection by a new one (Config.PerFlow):
// fresh ends, nothing of the old one in flight, quiet links. The ends'
// counters carry on.
func (m *Model) newConnection() {
	// The template chain follows one connection from trial to trial; a
	// new connection starts from its own state, looked up afresh.
	m.cur, m.prev = nil, nil
	m.q = m.q[:0]
	m.nPending = 0
	m.pkts, m.freePkts = m.pkts[:0], m.freePkts[:0]
	for i := range m.links {
		m.links[i].sim = nil
	}
	for i, e := range m.tcp {
		f := newTCP(m, i)
		e.v, e.rtx, e.ofo = f.v, e.rtx[:0], e.ofo[:0]
		e.rtG++
		e.daG++
	}
}
