package results

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// distRecords are a samples table's records, header first: three series
// (one named only by a Where the figures drop), empty and non-positive
// cells among the values.
func distRecords(n int) [][]string {
	r := rand.New(rand.NewPCG(7, 7))
	recs := [][]string{{"transport", "mode", "fct_ns", "keep"}}
	modes := []string{"lossless", "off", "lg"}
	for i := range n {
		v := strconv.FormatInt(int64(r.ExpFloat64()*20000)+1, 10)
		switch i % 97 {
		case 3:
			v = ""
		case 5:
			v = "-4"
		case 8:
			v = "0"
		}
		recs = append(recs, []string{"tcp", modes[r.IntN(3)], v, strconv.Itoa(i % 5)})
	}
	return recs
}

// A distribution read as its rows come (its values only) draws what the
// rows kept and read afterwards draw: the same series, points, dropped
// cells and ranges, for every kind that keeps values only.
func TestFigureDistributionStreamedAsRows(t *testing.T) {
	recs := distRecords(5000)
	figs := []Figure{
		{Name: "c", Kind: CCDF, X: "fct_ns", XScale: 1e-3, Tail: 0.05, Series: []string{"transport", "mode"}, Legend: "{mode} ({transport})", LogX: true, LogY: true},
		{Name: "d", Kind: CDF, X: "fct_ns", Series: []string{"mode"}, Where: []Cond{{Column: "keep", Value: "2.0"}}},
		{Name: "h", Kind: Histogram, X: "fct_ns", XScale: 1e-3, Series: []string{"mode"}, Bins: 12, LogX: true},
	}
	for _, f := range figs {
		streamed := newFigBuilder(f, nil)
		rows := newFigBuilder(f, nil)
		rows.dist = false // keep every row, read them at the end
		if !streamed.dist {
			t.Fatalf("%s: a %s without phase should keep its values only", f.Name, f.Kind)
		}
		reused := make([]string, 4)
		for _, r := range recs {
			copy(reused, r) // as the CSV reader reuses its record
			streamed.add(reused)
			rows.add(r)
		}
		a, b := streamed.finish(), rows.finish()
		if a.Empty() || a.Dropped == 0 {
			t.Fatalf("%s: the case draws nothing or drops nothing (%d dropped)", f.Name, a.Dropped)
		}
		if ga, gb := fmt.Sprintf("%+v", a), fmt.Sprintf("%+v", b); ga != gb {
			t.Errorf("%s: streamed\n%.600s\nfrom rows\n%.600s", f.Name, ga, gb)
		}
	}
}

// BenchmarkFiguresOfEveryTrial rebuilds the figures of a bundle whose
// compressed table holds a million trials drawn as a CCDF per series (as
// fct's fct_samples): B/op is what one rebuild allocates, heap-MB the
// most heap in use seen while it runs (sampled every 2 ms). Reading the
// whole table before drawing held every row's cells at once (fct's
// default run peaked at about 1 GB of RSS there).
//
//	go test -run '^$' -bench FiguresOfEveryTrial -benchmem -benchtime 3x ./results
func BenchmarkFiguresOfEveryTrial(b *testing.B) {
	bd, _ := newBundle(b)
	tw, err := bd.CreateTable(Table{Name: "samples", Compress: true,
		Fields:  []Field{{Name: "transport", Type: "string"}, {Name: "mode", Type: "string"}, {Name: "fct_ns", Type: "integer", Unit: "ns"}, {Name: "keep", Type: "integer"}},
		Figures: []Figure{{Name: "top", Title: "top 1%", Kind: CCDF, X: "fct_ns", XScale: 1e-3, Tail: 0.01, Series: []string{"transport", "mode"}, LogX: true, LogY: true}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range distRecords(1_000_000)[1:] {
		if err := tw.Write(r[0], r[1], r[2], r[3]); err != nil {
			b.Fatal(err)
		}
	}
	if err := bd.Finalize(StatusOK, ""); err != nil {
		b.Fatal(err)
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		fds, err := ReadFigures(bd.Dir())
		if err != nil || len(fds) != 1 || fds[0].Empty() {
			b.Fatalf("figures: %v", err)
		}
	}
	b.StopTimer()
	close(stop)
	<-sampled
	b.ReportMetric(float64(peak.Load())/(1<<20), "heap-MB")
}
