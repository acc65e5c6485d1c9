package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"testbed/internal/proctest"
)

// docBlock is a fenced ```sh block of a page, with the mark before it:
// <!-- doc-commands: run | background | hardware | ci | synopsis | long: why -->.
// A mark with a reason (long: a quarter of an hour) keeps it in why.
type docBlock struct {
	mark, why string
	line      int
	lines     []string
}

// docBlocks reads the marked command blocks of a markdown page. A ```sh
// block without a mark is an error: every command shown is run or says
// why not.
func docBlocks(t *testing.T, page string) []docBlock {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docBlock
	var cur *docBlock
	mark := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur != nil && strings.HasPrefix(l, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			if c := strings.TrimSpace(strings.SplitN(l, " #", 2)[0]); c != "" && !strings.HasPrefix(c, "#") {
				cur.lines = append(cur.lines, c)
			}
		case strings.HasPrefix(l, "<!-- doc-commands: "):
			mark = strings.TrimSuffix(strings.TrimPrefix(l, "<!-- doc-commands: "), " -->")
		case l == "```sh":
			if mark == "" {
				t.Errorf("%s:%d: a ```sh block without a <!-- doc-commands: run|background|hardware|ci|synopsis|long: why --> mark", page, n)
			}
			m, why, _ := strings.Cut(mark, ":")
			cur, mark = &docBlock{mark: m, why: strings.TrimSpace(why), line: n}, ""
		case strings.HasPrefix(l, "```"):
			// Another block: output or a file. One whose lines are
			// commands is a ```sh block, or they would go unchecked.
			inner := true
			for inner && sc.Scan() {
				n++
				c := sc.Text()
				if strings.HasPrefix(c, "```") {
					inner = false
				} else if strings.HasPrefix(c, "testbed ") || strings.HasPrefix(c, "go run ./cmd/testbed ") {
					t.Errorf("%s:%d: %q is a command in a %s block: make it a ```sh block with a <!-- doc-commands: ... --> mark", page, n, c, strings.TrimSpace(l))
				}
			}
			mark = ""
		}
	}
	return out
}

// testbedArgs splits a shown command line into the CLI's arguments and
// the file its output is redirected to (""), or ok=false when it is not a
// testbed command.
func testbedArgs(line string) (args []string, redirect string, ok bool) {
	line = strings.TrimPrefix(line, "go run ./cmd/testbed ")
	if !strings.HasPrefix(line, "testbed ") && !strings.HasPrefix(line, "TESTBED_") {
		if strings.HasPrefix(line, "exp ") || strings.HasPrefix(line, "results ") {
			line = "testbed " + line
		} else {
			return nil, "", false
		}
	}
	if i := strings.Index(line, " > "); i >= 0 {
		line, redirect = line[:i], strings.TrimSpace(line[i+3:])
	}
	f := strings.Fields(line)
	for len(f) > 0 && strings.Contains(f[0], "=") { // environment
		f = f[1:]
	}
	if len(f) == 0 || f[0] != "testbed" {
		return nil, "", false
	}
	return f[1:], redirect, true
}

// parses checks a command line names a command and flags this build has.
func parses(t *testing.T, where string, args []string) {
	t.Helper()
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	c, rest, err := root.Find(args)
	if err != nil || c == root {
		t.Errorf("%s: testbed %s: no such command (%v)", where, strings.Join(args, " "), err)
		return
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Errorf("%s: testbed %s: %v", where, strings.Join(args, " "), err)
	}
}

// Every command the README shows runs here, in order, in one directory,
// against the simulated lab: `run` blocks to exit 0, `background` blocks
// (a lab kept running) until they write the inventory they promise, then
// stopped with SIGINT; `hardware` blocks (a real lab), `long` blocks
// (minutes of simulated traffic; the mark says how long, as on the docs
// pages) and the `ci` block (what CI itself runs) are checked to name
// commands and flags this build has.
func TestReadmeCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs recipes on the simulated lab")
	}
	page, _ := filepath.Abs(filepath.Join("..", "..", "README.md"))
	dir := t.TempDir()
	t.Chdir(dir)
	runs, state := filepath.Join(dir, "runs"), filepath.Join(dir, "state")
	blocks := docBlocks(t, page)
	marks := map[string]int{}
	for _, b := range blocks {
		marks[b.mark] += len(b.lines)
	}
	if marks["run"] < 5 || marks["background"] < 2 || marks["hardware"] < 3 {
		t.Fatalf("%s: commands found per mark %v: the page's marks were not read", page, marks)
	}
	for _, b := range blocks {
		for _, l := range b.lines {
			where := page + ":" + strconv.Itoa(b.line)
			args, redirect, ok := testbedArgs(l)
			if !ok {
				if b.mark != "ci" {
					t.Errorf("%s: %q is not a testbed command", where, l)
				}
				continue
			}
			switch b.mark {
			case "run":
				code, out, errOut := testbedRun(t, append(args, "--runs-dir", runs, "--state-dir", state)...)
				if code != exitOK {
					t.Errorf("%s: %s: exit %d\n%s", where, l, code, errOut)
				}
				if redirect != "" {
					os.WriteFile(redirect, []byte(out), 0o644)
				}
			case "background":
				background(t, where, args, state)
			case "hardware", "ci", "long":
				parses(t, where, args)
			default:
				t.Errorf("%s: unknown mark %q", where, b.mark)
			}
		}
	}
}

// background starts a long-lived command (lab up) as its own process,
// waits until it has written its --inventory-out file, and stops it.
func background(t *testing.T, where string, args []string, state string) {
	t.Helper()
	out := ""
	for i, a := range args {
		if a == "--inventory-out" && i+1 < len(args) {
			out = args[i+1]
		}
	}
	if out == "" {
		t.Errorf("%s: a background command must write --inventory-out, to know when it is up", where)
		return
	}
	os.Remove(out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbedBin, append(args, "--state-dir", state)...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := proctest.Start(t, cmd); err != nil { // it ends with this binary

		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-done:
			t.Errorf("%s: testbed %s ended before writing %s: %v\n%s", where, strings.Join(args, " "), out, err, errOut.String())
			return
		case <-ctx.Done():
			t.Errorf("%s: testbed %s never wrote %s", where, strings.Join(args, " "), out)
			return
		case <-tick.C:
			if fi, err := os.Stat(out); err == nil && fi.Size() > 0 {
				break wait
			}
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-ctx.Done():
		t.Errorf("%s: testbed %s did not stop on SIGINT", where, strings.Join(args, " "))
	}
}
