package host

import (
	"fmt"
	"io"
)

// iperf3's output (esnet/iperf, iperf_api.c: the JSON of -J and the
// interval lines without it), for the simulated iperf3 of bulk.go.

const iperfSocket = 5

func (b *bulkFlow) connected() []map[string]any {
	return []map[string]any{{"socket": iperfSocket, "local_host": b.h.addr.Addr().String(), "local_port": 43210,
		"remote_host": b.a.dst.String(), "remote_port": b.a.port}}
}

func bps(bytes int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) * 8 / secs
}

// report is the client's -J output.
func (b *bulkFlow) report() map[string]any {
	var ivs, srvIvs []map[string]any
	var sent, recv, retx, maxCwnd, maxRTT, sumRTT int64
	minRTT := int64(-1)
	for _, iv := range b.intervals {
		secs := iv.end - iv.start
		st := map[string]any{"socket": iperfSocket, "start": iv.start, "end": iv.end, "seconds": secs, "bytes": iv.sent,
			"bits_per_second": bps(iv.sent, secs), "retransmits": iv.retransmits, "snd_cwnd": iv.cwnd, "snd_wnd": 3145728,
			"rtt": iv.rttUS, "rttvar": 0, "pmtu": 1500, "omitted": false, "sender": true}
		sum := map[string]any{"start": iv.start, "end": iv.end, "seconds": secs, "bytes": iv.sent, "bits_per_second": bps(iv.sent, secs),
			"retransmits": iv.retransmits, "omitted": false, "sender": true}
		ivs = append(ivs, map[string]any{"streams": []any{st}, "sum": sum})
		rs := map[string]any{"socket": iperfSocket, "start": iv.start, "end": iv.end, "seconds": secs, "bytes": iv.received,
			"bits_per_second": bps(iv.received, secs), "omitted": false, "sender": false}
		rsum := map[string]any{"start": iv.start, "end": iv.end, "seconds": secs, "bytes": iv.received, "bits_per_second": bps(iv.received, secs),
			"omitted": false, "sender": false}
		srvIvs = append(srvIvs, map[string]any{"streams": []any{rs}, "sum": rsum})
		sent, recv, retx = sent+iv.sent, recv+iv.received, retx+iv.retransmits
		maxCwnd, maxRTT, sumRTT = max(maxCwnd, iv.cwnd), max(maxRTT, iv.rttUS), sumRTT+iv.rttUS
		if minRTT < 0 || iv.rttUS < minRTT {
			minRTT = iv.rttUS
		}
	}
	secs := b.dur.Seconds()
	meanRTT := sumRTT / int64(max(len(b.intervals), 1))
	sender := map[string]any{"socket": iperfSocket, "start": 0, "end": secs, "seconds": secs, "bytes": sent, "bits_per_second": bps(sent, secs),
		"retransmits": retx, "max_snd_cwnd": maxCwnd, "max_snd_wnd": 3145728, "max_rtt": maxRTT, "min_rtt": max(minRTT, 0), "mean_rtt": meanRTT, "sender": true}
	receiver := map[string]any{"socket": iperfSocket, "start": 0, "end": secs, "seconds": secs, "bytes": recv, "bits_per_second": bps(recv, secs), "sender": true}
	testStart := map[string]any{"protocol": "TCP", "num_streams": 1, "blksize": 131072, "omit": 0, "duration": b.a.secs, "bytes": b.a.bytes, "blocks": 0, "reverse": 0, "tos": 0}
	out := map[string]any{
		"start": map[string]any{"connected": b.connected(), "version": "iperf 3.16", "system_info": "Linux " + b.h.name + " (simulated host)",
			"connecting_to": map[string]any{"host": b.a.hostString, "port": b.a.port}, "tcp_mss_default": b.base.MSS,
			"target_bitrate": 0, "fq_rate": 0, "sock_bufsize": 0, "sndbuf_actual": 16384, "rcvbuf_actual": 131072, "test_start": testStart},
		"intervals": ivs,
		"end": map[string]any{"streams": []any{map[string]any{"sender": sender, "receiver": receiver}},
			"sum_sent":              map[string]any{"start": 0, "end": secs, "seconds": secs, "bytes": sent, "bits_per_second": bps(sent, secs), "retransmits": retx, "sender": true},
			"sum_received":          map[string]any{"start": 0, "end": secs, "seconds": secs, "bytes": recv, "bits_per_second": bps(recv, secs), "sender": true},
			"sender_tcp_congestion": b.a.cc, "receiver_tcp_congestion": b.a.cc},
	}
	if b.a.srv {
		out["server_output_json"] = map[string]any{"start": map[string]any{"test_start": testStart}, "intervals": srvIvs,
			"end": map[string]any{"sum_received": map[string]any{"start": 0, "end": secs, "seconds": secs, "bytes": recv, "bits_per_second": bps(recv, secs), "sender": false}}}
	}
	return out
}

// iperfBytes is iperf3's Transfer column (binary units).
func iperfBytes(n int64) string {
	v := float64(n)
	for _, u := range []string{"Bytes", "KBytes", "MBytes", "GBytes"} {
		if v < 1024 || u == "GBytes" {
			return fmtNum(v) + " " + u
		}
		v /= 1024
	}
	return ""
}

// iperfBits is its Bitrate column (decimal units).
func iperfBits(b float64) string {
	for _, u := range []string{"bits/sec", "Kbits/sec", "Mbits/sec", "Gbits/sec"} {
		if b < 1000 || u == "Gbits/sec" {
			return fmtNum(b) + " " + u
		}
		b /= 1000
	}
	return ""
}

func fmtNum(v float64) string {
	switch {
	case v < 9.995:
		return fmt.Sprintf("%.2f", v)
	case v < 99.95:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// text is the client's output without -J.
func (b *bulkFlow) text(w io.Writer) {
	fmt.Fprintf(w, "Connecting to host %s, port %d\n", b.a.hostString, b.a.port)
	fmt.Fprintf(w, "[  %d] local %s port 43210 connected to %s port %d\n", iperfSocket, b.h.addr.Addr(), b.a.dst, b.a.port)
	fmt.Fprintln(w, "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd")
	var sent, recv, retx int64
	for _, iv := range b.intervals {
		fmt.Fprintf(w, "[  %d] %6.2f-%-6.2f sec  %s  %s  %4d   %s       \n", iperfSocket, iv.start, iv.end, iperfBytes(iv.sent), iperfBits(bps(iv.sent, iv.end-iv.start)), iv.retransmits, iperfBytes(iv.cwnd))
		sent, recv, retx = sent+iv.sent, recv+iv.received, retx+iv.retransmits
	}
	secs := b.dur.Seconds()
	fmt.Fprintln(w, "- - - - - - - - - - - - - - - - - - - - - - - - -")
	fmt.Fprintln(w, "[ ID] Interval           Transfer     Bitrate         Retr")
	fmt.Fprintf(w, "[  %d] %6.2f-%-6.2f sec  %s  %s  %4d             sender\n", iperfSocket, 0.0, secs, iperfBytes(sent), iperfBits(bps(sent, secs)), retx)
	fmt.Fprintf(w, "[  %d] %6.2f-%-6.2f sec  %s  %s                  receiver\n", iperfSocket, 0.0, secs, iperfBytes(recv), iperfBits(bps(recv, secs)))
	fmt.Fprintln(w, "\niperf Done.")
}
