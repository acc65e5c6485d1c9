package stardust

import (
	"embed"
	"io/fs"
)

//go:embed stardust_fa.p4 stardust_fe.p4 common/headers.p4
var sources embed.FS

// Sources are the P4_16 sources of the program by their path relative to
// this directory: what `testbed switch deploy` uploads to a switch and
// compiles there with the SDE's bf-p4c.
func Sources() map[string][]byte {
	out := map[string][]byte{}
	_ = fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sources.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	})
	return out
}

// MainFile is the source file of a program: the program's name is the
// file's base name, which is also the name of the .conf bf-p4c writes.
func MainFile(program string) string { return program + ".p4" }
