//go:build !unix

package readfile

import (
	"fmt"
	"os"
)

// open checks that path is a regular file before opening it, where
// O_NONBLOCK does not exist.
func open(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	return os.Open(path)
}
