package losssweep

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"testbed/experiments/recipetest"
	"testbed/results"
)

// statusRead is one read of the packet generator's status at the end of a
// stress test: the time the wait before it reached, and the time read
// right after it.
type statusRead struct {
	done       bool
	packets    int64
	waited, at time.Duration
}

// tailReads are the status reads of the last generator run in a switch's
// transcript (each request's reply, paired by id).
func tailReads(t *testing.T, path string) []statusRead {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ops := map[int64]string{}
	var reads []statusRead
	var pending *statusRead
	var waited time.Duration
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		_, msg, _ := strings.Cut(sc.Text(), " ")
		dir, body, _ := strings.Cut(msg, " ")
		var m struct {
			ID     int64  `json:"id"`
			Op     string `json:"op"`
			Result struct {
				Done    bool  `json:"done"`
				Packets int64 `json:"packets"`
				TimeNs  int64 `json:"time_ns"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(body), &m) != nil {
			continue
		}
		switch {
		case dir == ">" && m.Op == "pktgen.start":
			reads, pending = nil, nil
			fallthrough
		case dir == ">":
			ops[m.ID] = m.Op
		case ops[m.ID] == "time.wait":
			waited = time.Duration(m.Result.TimeNs)
		case ops[m.ID] == "pktgen.status":
			pending = &statusRead{done: m.Result.Done, packets: m.Result.Packets, waited: waited}
		case ops[m.ID] == "time" && pending != nil:
			pending.at = time.Duration(m.Result.TimeNs)
			reads, pending = append(reads, *pending), nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return reads
}

// rereads are the clock reads of the last generator run in a switch's
// transcript that came right after another clock read or a wait, whose
// answer already said the time.
func rereads(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	prev := ""
	for _, line := range strings.Split(string(b), "\n") {
		_, msg, _ := strings.Cut(line, " ")
		dir, body, _ := strings.Cut(msg, " ")
		var m struct {
			Op string `json:"op"`
		}
		if dir != ">" || json.Unmarshal([]byte(body), &m) != nil {
			continue
		}
		if m.Op == "pktgen.start" {
			got = nil
		}
		if m.Op == "time" && (prev == "time" || prev == "time.wait") {
			got = append(got, line)
		}
		prev = m.Op
	}
	return got
}

// A protected link is slower than the line rate the stress test first
// waits for, and the generator is then read until it is done (at 100G
// ordered and 1e-3 some 7% of the run, a read every 3 ms of device time:
// a poll, and the 2 ms a status read moves the simulated switch on while
// the generator runs). The reads skipped are only those that could not have
// found it done: the read that does follows a wait of one poll from a
// read that found it running, as when every poll is read, so the point's
// elapsed time is the same; and far fewer reads are made than polls pass.
// The clock is not read again where a read or a wait has just said it
// (lgbench's clockWait).
func TestStressTailSkipsOnlyReadsThatCannotFindTheGeneratorDone(t *testing.T) {
	lab := recipetest.StartLab(t, 1)
	var s Summary
	res := recipetest.Run(t, lab, New(), 1, &s, nil, "links=lg100", "loss_rates=1e-3", "modes=linkguardian",
		"frames=20000000")
	if res.Status != results.StatusOK {
		t.Fatalf("run %s: %s", res.Status, res.Reason)
	}
	reads := tailReads(t, filepath.Join(res.Dir, "transcripts", "sw1.log"))
	n := len(reads)
	if n < 2 || !reads[n-1].done || reads[n-2].done {
		t.Fatalf("status reads of the stress test %+v: want reads ending in the one that finds the generator done", reads)
	}
	const poll = time.Millisecond // lgbench.StressFrom's
	if reads[n-1].waited != reads[n-2].at+poll {
		t.Errorf("the read that found the generator done came after a wait to %v, one poll after the read that found it running is %v: a read skipped could have found it done (reads %+v)",
			reads[n-1].waited, reads[n-2].at+poll, reads)
	}
	if again := rereads(t, filepath.Join(res.Dir, "transcripts", "sw1.log")); len(again) > 0 {
		t.Errorf("%d clock reads right after a read or a wait of the clock, first %s", len(again), again[0])
	}
	polls := int((reads[n-1].at-reads[0].at)/poll) + 1
	if polls < 20 || n*4 > polls {
		t.Errorf("%d status reads over %d polls of the tail: want a tail of 20 polls or more read in a quarter of them or fewer (reads %+v)", n, polls, reads)
	}
}
