package ecmp

import (
	"embed"

	"testbed/p4/internal/sources"
)

//go:embed ecmp.p4
var embedded embed.FS

// Sources are the P4_16 sources of the program by their path relative to
// this directory: what `testbed switch deploy` uploads to a switch and
// compiles there with the SDE's bf-p4c.
func Sources() map[string][]byte { return sources.Files(embedded) }

// MainFile is the source file of a program: the program's name is the
// file's base name, which is also the name of the .conf bf-p4c writes.
func MainFile(program string) string { return program + ".p4" }
