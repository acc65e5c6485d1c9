package tofino

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
)

// The simulated switch cannot compile P4: "bf-p4c" here checks that the
// uploaded sources are complete (the main file and every quoted include)
// and then installs the program under its name, so run_switchd.sh -p finds
// it. What a real compile would reject beyond that is not modelled.

var (
	p4DirRe   = regexp.MustCompile(`\.testbed/p4/([A-Za-z0-9_-]+)`)
	p4BuildRe = regexp.MustCompile(`# program=([A-Za-z0-9_-]+) main=(\S+)`)
	includeRe = regexp.MustCompile(`(?m)^\s*#\s*include\s+"([^"]+)"`)
)

// p4Upload unpacks the tar on stdin as ~/.testbed/p4/<dir> and prints the
// hash the driver's shell pipeline computes: sha256sum over the sorted
// `sha256sum ./path` lines of every file.
func (t *Tofino) p4Upload(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
	m := p4DirRe.FindStringSubmatch(cmd)
	if m == nil {
		fmt.Fprintln(stderr, "tar: no directory")
		return 2
	}
	files := map[string][]byte{}
	tr := tar.NewReader(io.LimitReader(stdin, 16<<20))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Fprintf(stderr, "tar: %v\n", err)
			return 2
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			fmt.Fprintf(stderr, "tar: %v\n", err)
			return 2
		}
		files[path.Clean(h.Name)] = b
	}
	t.mu.Lock()
	if t.p4src == nil {
		t.p4src = map[string]map[string][]byte{}
	}
	t.p4src[m[1]] = files
	t.mu.Unlock()
	lines := make([]string, 0, len(files))
	for p, b := range files {
		h := sha256.Sum256(b)
		lines = append(lines, hex.EncodeToString(h[:])+"  ./"+p+"\n")
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	sum := sha256.Sum256([]byte(strings.Join(lines, "")))
	fmt.Fprintln(stdout, hex.EncodeToString(sum[:]))
	return 0
}

// p4Build "compiles" an uploaded program; t.mu is held.
func (t *Tofino) p4Build(cmd string, stdout, stderr io.Writer) int {
	m := p4BuildRe.FindStringSubmatch(cmd)
	d := p4DirRe.FindStringSubmatch(cmd)
	if m == nil || d == nil {
		fmt.Fprintln(stderr, "bf-p4c: no program")
		return 2
	}
	program, main := m[1], m[2]
	files := t.p4src[d[1]]
	if _, ok := files[main]; !ok {
		fmt.Fprintf(stderr, "bf-p4c: error: %s: No such file or directory\n", main)
		return 1
	}
	seen := map[string]bool{}
	var check func(file string) error
	check = func(file string) error {
		if seen[file] {
			return nil
		}
		seen[file] = true
		for i, line := range strings.Split(string(files[file]), "\n") {
			inc := includeRe.FindStringSubmatch(line)
			if inc == nil {
				continue
			}
			// Relative to the including file, then to -I (the top).
			cands := []string{path.Join(path.Dir(file), inc[1]), path.Clean(inc[1])}
			found := ""
			for _, c := range cands {
				if _, ok := files[c]; ok {
					found = c
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s(%d): error: cannot open include file %q", file, i+1, inc[1])
			}
			if err := check(found); err != nil {
				return err
			}
		}
		return nil
	}
	if err := check(main); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	t.installed[program] = true
	fmt.Fprintf(stdout, "conf=/opt/bf-sde/install/share/p4/targets/tofino/%s.conf\n", program)
	fmt.Fprintf(stdout, "bf-p4c (simulated switch): %d files, includes resolved; not compiled\n", len(files))
	return 0
}
