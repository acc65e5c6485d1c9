package host

import (
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The scripts are the driver's whole vocabulary: each parses as POSIX sh,
// starts with its op line and arguments, and is documented in COMMANDS.md
// with the arguments it really sends.
func TestCommandsAreFixedAndDocumented(t *testing.T) {
	doc, err := os.ReadFile("COMMANDS.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(doc), "\n") {
		if m := regexp.MustCompile("^\\| `([a-z-]+)` \\|([^|]*)\\|").FindStringSubmatch(l); m != nil {
			rows[m[1]] = m[2]
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to check the scripts with")
	}
	var ops []string
	for op := range commandVars {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		vars := commandVars[op]
		row, ok := rows[op]
		if !ok {
			t.Errorf("%s is not in COMMANDS.md's table", op)
			continue
		}
		for _, v := range vars {
			if !strings.Contains(row, "`"+v+"`") {
				t.Errorf("COMMANDS.md: %s does not list its argument %s", op, v)
			}
		}
		if _, ok := commandBodies[op]; !ok {
			t.Errorf("%s has no body", op)
			continue
		}
		args := make([]string, len(vars))
		for i := range args {
			args[i] = "it's a value"
		}
		s := script(op, args...)
		lines := strings.Split(s, "\n")
		if lines[0] != "# testbed:"+op {
			t.Errorf("%s: first line %q", op, lines[0])
		}
		for i, v := range vars {
			if want := v + `='it'\''s a value'`; lines[1+i] != want {
				t.Errorf("%s: line %d is %q, want %q", op, 2+i, lines[1+i], want)
			}
		}
		if out, err := exec.Command(sh, "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s does not parse: %v %s", op, err, out)
		}
	}
	for op := range rows {
		if _, ok := commandVars[op]; !ok {
			t.Errorf("COMMANDS.md lists %s, which the driver never sends", op)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, v := range []string{"", "plain", "it's", "a b\tc", `$HOME "x" \n`, "'", "''", "new\nline", "*"} {
		out, err := exec.Command("sh", "-c", "X="+shellQuote(v)+"; printf %s \"$X\"").Output()
		if err != nil || string(out) != v {
			t.Errorf("%q comes out as %q (%v)", v, out, err)
		}
	}
}
