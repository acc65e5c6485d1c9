package wire

import (
	"strings"
	"testing"
)

// FuzzParseFaultSpec: a --fault spec parses or is refused with a message,
// never a panic; a parsed spec written back parses to itself, and injects.
func FuzzParseFaultSpec(f *testing.F) {
	for _, s := range []string{"drop", "drop:3", "delay:200ms:always", "garbage:always", "error:BF_INVALID_ARG", "error:a:b:2",
		"slip:200", "slip:1:always", "slip:0",
		"delay:-1s", "drop:0", "drop:99999999999999999999", "", ":", "error:", "delay:1h:always:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return // a flag value, not a document
		}
		fs, err := ParseFaultSpec(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", s)
			}
			return
		}
		back, err := ParseFaultSpec(fs.String())
		if err != nil || back != fs {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, fs, fs.String(), back, err)
		}
		var faults Faults
		if err := faults.Inject(fs); err != nil && !strings.Contains(err.Error(), fs.Kind) {
			t.Fatalf("%q: inject: %v", s, err)
		}
	})
}
