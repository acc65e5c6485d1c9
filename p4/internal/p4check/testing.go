package p4check

import "testing"

// LoadAll reads and parses the main file (file(program)) of each program,
// failing t on the first that cannot be: what a program package's names
// tests hold to its contract.
func LoadAll(t testing.TB, file func(program string) string, programs ...string) map[string]*Program {
	t.Helper()
	out := map[string]*Program{}
	for _, prog := range programs {
		src, err := Load(file(prog))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", file(prog), err)
		}
		out[prog] = p
	}
	return out
}

// Report reports each of errs as an error of t.
func Report(t testing.TB, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}
