package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFanOutOneHostFailing(t *testing.T) {
	d := sharedSSHD(t)
	hosts := []*Host{d.open(t, "h1"), d.open(t, "h2"), d.open(t, "h3")}
	ctx := testCtx(t)
	outs := FanOut(ctx, hosts, 2, func(ctx context.Context, h *Host) (string, error) {
		cmd := "echo " + h.Name()
		if h.Name() == "h2" {
			cmd = "echo broken >&2; exit 7"
		}
		r, err := h.Run(ctx, cmd)
		return strings.TrimSpace(r.Stdout), err
	})
	if len(outs) != 3 {
		t.Fatalf("%d outcomes", len(outs))
	}
	for i, want := range []string{"h1", "h2", "h3"} {
		if outs[i].Host != want {
			t.Fatalf("outcome %d is for %s", i, outs[i].Host)
		}
	}
	if outs[0].Err != nil || outs[0].Value != "h1" || outs[2].Err != nil || outs[2].Value != "h3" {
		t.Fatalf("the hosts that worked lost their results: %+v", outs)
	}
	var xe *ExitError
	if !errors.As(outs[1].Err, &xe) || xe.Status != 7 {
		t.Fatalf("h2: %v", outs[1].Err)
	}
	err := Failures(outs)
	if err == nil || !strings.Contains(err.Error(), "h2:") || strings.Contains(err.Error(), "h1") || strings.Contains(err.Error(), "h3") {
		t.Fatalf("failures: %v", err)
	}
}

func TestFanOutBoundPanicAndCancel(t *testing.T) {
	var hosts []*Host
	for i := range 7 {
		hosts = append(hosts, &Host{name: fmt.Sprintf("h%d", i)})
	}
	var running, peak atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	outs := FanOut(context.Background(), hosts, 3, func(ctx context.Context, h *Host) (int, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == 3 {
			once.Do(func() { close(release) })
		}
		select {
		case <-release:
		case <-time.After(2 * time.Second):
		}
		switch h.Name() {
		case "h4":
			panic("boom")
		case "h5":
			return 0, errors.New("no route to host")
		}
		return len(h.Name()), nil
	})
	if p := peak.Load(); p != 3 {
		t.Fatalf("peak concurrency %d, want the bound 3", p)
	}
	for i, o := range outs {
		switch i {
		case 4:
			if o.Err == nil || !strings.Contains(o.Err.Error(), "h4: panic: boom") {
				t.Errorf("h4: %v", o.Err)
			}
		case 5:
			if o.Err == nil {
				t.Error("h5 did not fail")
			}
		default:
			if o.Err != nil || o.Value != 2 {
				t.Errorf("%s: %+v", o.Host, o)
			}
		}
	}
	if err := Failures(outs); err == nil || !strings.Contains(err.Error(), "h5: no route to host") {
		t.Fatalf("failures %v", err)
	}

	// A cancelled context: hosts that had not started say so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	outs = FanOut(ctx, hosts, 1, func(ctx context.Context, h *Host) (int, error) { return 1, ctx.Err() })
	for _, o := range outs {
		if !errors.Is(o.Err, context.Canceled) {
			t.Fatalf("%s: %v", o.Host, o.Err)
		}
	}
	if outs := FanOut(context.Background(), nil, 4, func(context.Context, *Host) (int, error) { return 0, nil }); len(outs) != 0 {
		t.Fatal("outcomes for no hosts")
	}
}
