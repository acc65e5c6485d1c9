// Package readfile reads a file a user hands the tool (an inventory, a
// parameters file, a suite, a link table, a bundle's manifest) without
// trusting it: only a regular file is read (a FIFO or a device would hang
// or never end), and no more than a stated number of bytes. It imports only
// the standard library, so every layer may use it.
package readfile

import (
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is returned (wrapped) for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Read returns the contents of the regular file at path, at most limit
// bytes; a larger file is an error naming the file and the limit. A
// symbolic link is followed (a lab keeps its inventory where it likes),
// but what it points to must be a regular file.
func Read(path string, limit int64) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d this file may have: %w", path, fi.Size(), limit, ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit { // grew while being read
		return nil, fmt.Errorf("%s: more than the %d bytes this file may have: %w", path, limit, ErrTooLarge)
	}
	return data, nil
}
