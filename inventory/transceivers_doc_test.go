package inventory

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// docs/transceivers.md's table lists exactly the module types the loader
// knows, with their rates and FEC modes (default first) and fibre.
func TestTransceiverTableMatchesTheCode(t *testing.T) {
	b, err := os.ReadFile("../docs/transceivers.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| transceiver") {
			cells := strings.Split(strings.Trim(l, "| "), " | ")
			rows = append(rows, strings.Join(cells[:4], " | "))
		}
	}
	var want []string
	for _, tr := range Transceivers() {
		fecs := []string{tr.DefaultFEC}
		for _, f := range tr.FECs {
			if f != tr.DefaultFEC {
				fecs = append(fecs, f)
			}
		}
		fibre := "single-mode (OS2, 1310 nm)"
		if tr.Multimode {
			fibre = "multimode (OM3/OM4, 850 nm)"
		}
		want = append(want, fmt.Sprintf("%s | %g Gb/s | %s | %s", tr.Name, tr.RateBps/1e9, strings.Join(fecs, ", "), fibre))
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/transceivers.md lists\n%s\nthe code knows\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
