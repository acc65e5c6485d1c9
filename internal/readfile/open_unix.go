//go:build unix

package readfile

import (
	"os"
	"syscall"
)

// open does not wait for a writer when path is a FIFO (O_NONBLOCK does not
// change how a regular file reads); Read then refuses it as not regular.
func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
