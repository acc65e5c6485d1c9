//go:build !unix

package results

import (
	"fmt"
	"os"
)

// openNoFollow checks with Lstat that p is a regular file before opening
// it, where O_NOFOLLOW and O_NONBLOCK do not exist.
func openNoFollow(p string) (*os.File, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	return os.Open(p)
}
