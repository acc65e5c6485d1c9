package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The simulated hosts' ib_write_lat (perftest, github.com/linux-rdma/
// perftest, src/write_lat.c): a server waits for a client on its TCP port;
// the client runs the RDMA WRITE ping-pong with it across the path as the
// path is configured, on fctmodel's RoCEv2 RC model (each iteration the
// client WRITEs -s bytes, the server WRITEs them back once they landed),
// and both print perftest's report. The report is computed as perftest's
// print_report_lat (src/perftest_parameters.c) computes it: the deltas
// between successive posts (iters - 1 of them: one round trip each),
// halved (rtt_factor 2 for WRITE), sorted, the largest
// LAT_MEASURE_TAIL (2) left out of the count, the median by its
// get_median, the average and stdev over the rest (with its integer
// truncation of each deviation), t_max at index n, the 99% and 99.9% at
// ceil(n*0.99) and ceil(n*0.999); printed with RESULT_LINE,
// RESULT_FMT_LAT and REPORT_FMT_LAT (src/perftest_parameters.h).

// rdmaServer is an ib_write_lat server waiting for its client.
type rdmaServer struct {
	host   *SimHost
	size   int
	report chan string // the client's table, once it ran
}

const (
	perftestResultLine = "---------------------------------------------------------------------------------------\n"
	perftestFmtLat     = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
	perftestDefaultTCP = 18515 // perftest's DEF_PORT
)

type writeLatArgs struct {
	size, iters, port int
	device, server    string
	unsorted          bool // -U: print every sample before the table
}

func parseWriteLatArgs(args []string) (writeLatArgs, error) {
	a := writeLatArgs{size: 2, iters: 1000, port: perftestDefaultTCP, device: "mlx5_0"}
	for i := 0; i < len(args); i++ {
		f := args[i]
		if len(f) > 0 && f[0] != '-' {
			if a.server != "" {
				return a, fmt.Errorf("unexpected argument %q", f)
			}
			a.server = f
			continue
		}
		if f == "-U" || f == "--report-unsorted" {
			a.unsorted = true
			continue
		}
		if i+1 >= len(args) {
			return a, fmt.Errorf("option %s needs a value", f)
		}
		v := args[i+1]
		i++
		n, err := strconv.Atoi(v)
		switch f {
		case "-s", "--size":
			a.size = n
		case "-n", "--iters":
			a.iters = n
		case "-p", "--port":
			a.port = n
		case "-d", "--ib-dev":
			a.device, err = v, nil
		case "-i", "--ib-port", "-x", "--gid-index":
		default:
			return a, fmt.Errorf("unknown option %s", f)
		}
		if err != nil {
			return a, fmt.Errorf("option %s: %q is not a number", f, v)
		}
	}
	if a.size < 1 || a.iters < 5 || a.port < 1 || a.port > 65535 {
		return a, fmt.Errorf("size %d, iterations %d, port %d out of range", a.size, a.iters, a.port)
	}
	return a, nil
}

// ibWriteLat is the host's ib_write_lat (hostagent.ToolFunc).
func (h *SimHost) ibWriteLat(ctx context.Context, args []string, out io.Writer) error {
	a, err := parseWriteLatArgs(args)
	if err != nil {
		fmt.Fprintf(out, " Invalid command line: %v\n", err)
		return err
	}
	fmt.Fprintf(out, "%s                    RDMA_Write Latency Test\n Dual-port       : OFF\t\tDevice         : %s\n Number of qps   : 1\t\tTransport type : IB\n Connection type : RC\t\tUsing SRQ      : OFF\n TX depth        : 1\n Mtu             : 1024[B]\n Link type       : Ethernet\n",
		perftestResultLine, a.device)
	if a.server == "" {
		return h.writeLatServer(ctx, a, out)
	}
	return h.writeLatClient(ctx, a, out)
}

// SetRDMAOpenTime sets how long the host's ib_write_lat takes to open its
// RDMA device (ctx_open_device and the port checks, which perftest's
// write_lat.c does before establish_connection listens): a server
// started takes that long to listen, and a client that comes sooner is
// refused. 0, the default, listens at once.
func (h *SimHost) SetRDMAOpenTime(d time.Duration) {
	h.mu.Lock()
	h.rdmaOpen = d
	h.mu.Unlock()
}

// RDMARefused is how many of the host's ib_write_lat clients found no
// server listening ("Couldn't connect").
func (h *SimHost) RDMARefused() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rdmaRefused
}

func (h *SimHost) writeLatServer(ctx context.Context, a writeLatArgs, out io.Writer) error {
	n := h.net
	h.mu.Lock()
	open := h.rdmaOpen
	h.mu.Unlock()
	if open > 0 {
		select {
		case <-time.After(open):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	key := netip.AddrPortFrom(h.addr.Addr(), uint16(a.port))
	srv := &rdmaServer{host: h, size: a.size, report: make(chan string, 1)}
	n.mu.Lock()
	if n.rdmaSrv[key] != nil {
		n.mu.Unlock()
		fmt.Fprintf(out, " Couldn't bind the socket to port %d\n", a.port)
		return fmt.Errorf("port %d in use", a.port)
	}
	n.rdmaSrv[key] = srv
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		if n.rdmaSrv[key] == srv {
			delete(n.rdmaSrv, key)
		}
		n.mu.Unlock()
	}()
	fmt.Fprint(out, "\n************************************\n* Waiting for client to connect... *\n************************************\n")
	select {
	case r := <-srv.report:
		fmt.Fprint(out, r)
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (h *SimHost) writeLatClient(ctx context.Context, a writeLatArgs, out io.Writer) error {
	n := h.net
	ip, err := netip.ParseAddr(a.server)
	if err != nil {
		fmt.Fprintf(out, " Couldn't resolve %s\n", a.server)
		return err
	}
	n.mu.Lock()
	srv := n.rdmaSrv[netip.AddrPortFrom(ip, uint16(a.port))]
	if srv != nil {
		delete(n.rdmaSrv, netip.AddrPortFrom(ip, uint16(a.port))) // one client per server
	}
	var fibre string
	if srv != nil {
		fibre = n.fibres[[2]string{h.sw, srv.host.sw}]
	}
	n.mu.Unlock()
	if srv == nil {
		h.mu.Lock()
		h.rdmaRefused++
		h.mu.Unlock()
		fmt.Fprintf(out, "Couldn't connect to %s:%d\nUnable to open file descriptor for socket connection Unable to init the socket connection\n", a.server, a.port)
		return errors.New("no server")
	}
	fail := func(err error) error {
		srv.report <- ""
		fmt.Fprintf(out, " %v\n", err)
		return err
	}
	if srv.size != a.size {
		return fail(fmt.Errorf("the server's size %d is not the client's %d", srv.size, a.size))
	}
	if fibre == "" {
		return fail(fmt.Errorf("no path from %s to %s across a switch fibre", h.sw, srv.host.sw))
	}
	p, err := n.path(fibre)
	if err != nil || !p.up {
		return fail(fmt.Errorf("Unable to Connect the HCA's through the link (%s down: %v)", fibre, err))
	}
	k := modelKey{mode: p.mode, copies: p.copies, pause: p.pause, resume: p.resume, bps: p.bps, fec: p.fec, rxDBm: p.rxDBm, drop: p.drop,
		req: a.size, resp: a.size, rdma: true}
	h.flowMu.Lock()
	if h.rdma == nil || h.rdma.key != k {
		m, err := newTrialModel(k, p, h.flowRng)
		if err != nil {
			h.flowMu.Unlock()
			return fail(err)
		}
		h.rdma = &connState{key: k, model: m}
	}
	rtts := make([]float64, a.iters-1) // the deltas between successive posts
	for i := range rtts {
		if i%4096 == 0 && ctx.Err() != nil {
			h.flowMu.Unlock()
			return fail(context.Cause(ctx))
		}
		rtts[i] = float64(h.rdma.model.Trial().FCT) / float64(time.Microsecond)
	}
	h.flowMu.Unlock()
	report := perftestLatReport(a.size, a.iters, rtts)
	srv.report <- report
	if a.unsorted {
		fmt.Fprint(out, perftestUnsorted(rtts))
	}
	fmt.Fprint(out, report)
	return nil
}

// perftestUnsorted is what print_report_lat prints with -U before the
// table: "#, usec", then every delta in the order measured, halved
// (rtt_factor 2 for WRITE), numbered from 1, with %g.
func perftestUnsorted(deltas []float64) string {
	var b strings.Builder
	b.Grow(16 * (len(deltas) + 1))
	b.WriteString("#, usec\n")
	for i, x := range deltas {
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(", ")
		b.WriteString(strconv.FormatFloat(x/2, 'g', 6, 64))
		b.WriteByte('\n')
	}
	return b.String()
}

// perftestLatReport is perftest's print_report_lat for a WRITE latency
// test: deltas are the round trips in microseconds.
func perftestLatReport(size, iters int, deltas []float64) string {
	d := make([]float64, len(deltas))
	for i, x := range deltas {
		d[i] = x / 2 // rtt_factor
	}
	slices.Sort(d)
	m := len(d) - 2 // LAT_MEASURE_TAIL
	var median float64
	if (m-1)%2 != 0 {
		median = (d[m/2] + d[m/2-1]) / 2
	} else {
		median = d[m/2]
	}
	var sum float64
	for _, x := range d[:m] {
		sum += x
	}
	avg := sum / float64(m)
	var ss float64
	for _, x := range d[:m] {
		v := float64(int(avg - x)) // perftest: int temp_var
		ss += float64(int(v * v))
	}
	stdev := math.Sqrt(ss / float64(m))
	i99, i999 := int(math.Ceil(float64(m)*0.99)), int(math.Ceil(float64(m)*0.999))
	row := fmt.Sprintf(" %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		size, iters, d[0], d[m], median, avg, stdev, d[i99], d[i999])
	return perftestResultLine + perftestFmtLat + row + perftestResultLine
}
