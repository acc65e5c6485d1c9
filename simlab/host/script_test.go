package host

import (
	"slices"
	"testing"
)

func TestParseScriptQuoting(t *testing.T) {
	op, v, err := parseScript("# testbed:run\nW='12'\nQ='echo '\\''a'\\''\nb'\necho body\n")
	if err != nil || op != "run" || v["W"] != "12" || v["Q"] != "echo 'a'\nb" {
		t.Errorf("parse: %q %q %v", op, v, err)
	}
	if _, _, err := parseScript("uname -a"); err == nil {
		t.Error("a plain command parsed as a script")
	}
	if _, _, err := parseScript("# testbed:upload\nP='x'\n"); err == nil {
		t.Error("missing arguments accepted")
	}
	w, err := shellWords(`echo 'a b' "c"d e`)
	if err != nil || !slices.Equal(w, []string{"echo", "a b", "cd", "e"}) {
		t.Errorf("words %q, %v", w, err)
	}
}
