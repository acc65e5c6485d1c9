package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"testbed/internal/proctest"
)

// Every command the docs/ pages show is run here or checked against this
// build, the way TestReadmeCommandsRun holds the README: ```sh blocks by
// their mark (run: each line exits 0 on the simulated lab, a line ending
// in & is a lab kept up until the block ends; long: named with why and
// checked to parse, as hardware and ci; synopsis: every command path and
// --flag exists), and every inline `testbed ...` span as a synopsis. The
// commands run as the built binary, in a directory of their own where
// docs/ is the repository's (a scenario file the page names).
// CHANGELOG.md is history: the commands it quotes were those of their day.
func TestDocsCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs recipes on the simulated lab")
	}
	docs, _ := filepath.Abs(filepath.Join("..", "..", "docs"))
	pages, err := filepath.Glob(filepath.Join(docs, "*.md"))
	if err != nil || len(pages) < 10 {
		t.Fatalf("docs pages: %v %v", pages, err)
	}
	dir := t.TempDir()
	if err := os.Symlink(docs, filepath.Join(dir, "docs")); err != nil {
		t.Fatal(err)
	}
	runs, state := filepath.Join(dir, "runs"), filepath.Join(dir, "state")
	counts := map[string]int{}
	for _, page := range pages {
		if filepath.Base(page) == "CHANGELOG.md" {
			continue
		}
		for _, where := range inlineCommands(t, page) {
			counts["inline"]++
			synopsis(t, where.at, where.line)
		}
		for _, b := range docBlocks(t, page) {
			where := page + ":" + strconv.Itoa(b.line)
			var bg []func()
			if b.mark == "synopsis" {
				// A line that is not a command continues the one before.
				var joined []string
				for _, l := range b.lines {
					if _, _, ok := testbedArgs(l); !ok && len(joined) > 0 {
						joined[len(joined)-1] += " " + l
						continue
					}
					joined = append(joined, l)
				}
				b.lines = joined
			}
			for _, l := range b.lines {
				args, _, ok := testbedArgs(l)
				if !ok {
					// ci and hardware blocks may hold other tools' commands
					// (make, etcd); export sets a page's environment.
					if b.mark != "ci" && b.mark != "hardware" && !strings.HasPrefix(l, "export ") {
						t.Errorf("%s: %q is not a testbed command", where, l)
					}
					continue
				}
				counts[b.mark]++
				switch b.mark {
				case "run":
					if args[len(args)-1] == "&" {
						bg = append(bg, keepUp(t, where, dir, args[:len(args)-1], state))
						continue
					}
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
					cmd := exec.CommandContext(ctx, testbedBin, append(args, "--runs-dir", runs, "--state-dir", state)...)
					cmd.Dir = dir
					out, err := cmd.CombinedOutput()
					cancel()
					if err != nil {
						t.Errorf("%s: %s: %v\n%s", where, l, err, tail(out, 2000))
					}
				case "long":
					if b.why == "" {
						t.Errorf("%s: a long block says why it is not run: <!-- doc-commands: long: why -->", where)
					}
					parses(t, where, args)
				case "hardware", "ci":
					parses(t, where, args)
				case "synopsis":
					synopsis(t, where, l)
				default:
					t.Errorf("%s: mark %q: the docs pages take run, long, hardware, ci or synopsis", where, b.mark)
				}
			}
			for _, stop := range bg {
				stop()
			}
		}
	}
	if counts["run"] < 5 || counts["inline"] < 20 || counts["synopsis"] < 5 {
		t.Errorf("commands found %v: the pages' marks or spans were not read", counts)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// keepUp starts a lab a block keeps running (a line ending in &) and
// returns once it has written its --inventory-out file, with the stop
// that ends it by SIGINT, as Ctrl-C would.
func keepUp(t *testing.T, where, dir string, args []string, state string) (stop func()) {
	t.Helper()
	out := ""
	for i, a := range args {
		if a == "--inventory-out" && i+1 < len(args) {
			out = filepath.Join(dir, args[i+1])
		}
	}
	if out == "" {
		t.Fatalf("%s: a command kept up (&) must write --inventory-out, to know when it is up", where)
	}
	os.Remove(out)
	cmd := exec.Command(testbedBin, append(args, "--state-dir", state)...)
	cmd.Dir = dir
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := proctest.Start(t, cmd); err != nil { // it ends with this binary

		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() { // a test that failed half-way through its block
		if !stopped {
			cmd.Process.Kill()
			<-done
		}
	})
	stop = func() {
		stopped = true
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: testbed %s: on SIGINT: %v\n%s", where, strings.Join(args, " "), err, tail(errOut.Bytes(), 2000))
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s: testbed %s did not stop on SIGINT", where, strings.Join(args, " "))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			t.Fatalf("%s: testbed %s ended before writing %s: %v\n%s", where, strings.Join(args, " "), out, err, tail(errOut.Bytes(), 2000))
		case <-ctx.Done():
			stop()
			t.Fatalf("%s: testbed %s never wrote %s", where, strings.Join(args, " "), out)
		case <-tick.C:
			if fi, err := os.Stat(out); err == nil && fi.Size() > 0 {
				return stop
			}
		}
	}
}

type inline struct{ at, line string }

var inlineRe = regexp.MustCompile("`((?:go run \\./cmd/)?testbed [a-z][^`]*)`")

// inlineCommands returns the `testbed ...` code spans of a page's prose
// (outside fenced blocks).
func inlineCommands(t *testing.T, page string) []inline {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []inline
	fence := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range inlineRe.FindAllStringSubmatch(l, -1) {
			out = append(out, inline{page + ":" + strconv.Itoa(n), m[1]})
		}
	}
	return out
}

var flagRe = regexp.MustCompile(`(?:^|[\s\[(|])(--[a-z][a-z0-9-]*)`)

// synopsis checks a command's shape as the docs write it: its command
// path names a command of this build, every --flag is one of that
// command's (or, where the line gives alternatives with |, of a sibling's
// or a subcommand's), and each alternative's first word after " | " is a
// command beside it.
func synopsis(t *testing.T, where, line string) {
	t.Helper()
	line = strings.TrimPrefix(line, "go run ./cmd/")
	words := strings.Fields(strings.TrimPrefix(line, "testbed "))
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	c, _, err := root.Find(words)
	if err != nil || c == root {
		t.Errorf("%s: %q: no such command (%v)", where, line, err)
		return
	}
	scope := []*cobra.Command{c}
	if c.Parent() != nil && c.Parent() != root {
		scope = append(scope, c.Parent().Commands()...)
	}
	scope = append(scope, c.Commands()...)
	has := func(flag string) bool {
		for _, s := range scope {
			if s.Flags().Lookup(flag) != nil || s.InheritedFlags().Lookup(flag) != nil {
				return true
			}
		}
		return false
	}
	for _, m := range flagRe.FindAllStringSubmatch(line, -1) {
		if f := strings.TrimPrefix(m[1], "--"); f != "help" && !has(f) {
			t.Errorf("%s: %q: testbed %s has no flag --%s", where, line, c.CommandPath()[len("testbed "):], f)
		}
	}
	for _, alt := range strings.Split(line, " | ")[1:] {
		w := strings.Fields(alt)
		if len(w) == 0 || strings.HasPrefix(w[0], "-") || strings.HasPrefix(w[0], "[") {
			continue
		}
		found := false
		for _, s := range scope {
			if s.Name() == w[0] || s.HasAlias(w[0]) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %q: %q is no command beside testbed %s", where, line, w[0], c.Name())
		}
	}
}
