//go:build unix

package results

import (
	"os"
	"syscall"
)

// openNoFollow opens p for reading without following a final symbolic
// link (O_NOFOLLOW fails on one) and without waiting for a writer on a
// FIFO (O_NONBLOCK; it does not change how a regular file reads).
func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
