package host

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Upload writes data to path on the host with the given mode, without
// sftp: the bytes go to the standard input of "cat >" a temporary file
// beside path, whose sha256 is checked before it is renamed over path (no
// fsync). A relative path (or one starting with "~/") is under the login
// user's home. It returns the file's sha256.
func (h *Host) Upload(ctx context.Context, dst string, data []byte, mode fs.FileMode) (string, error) {
	what := fmt.Sprintf("upload %s", dst)
	dst = homeRelative(dst)
	if dst == "" || dst == "." || strings.HasSuffix(dst, "/") {
		return "", fmt.Errorf("%s: %s: not a file path", h.name, what)
	}
	if mode&^fs.ModePerm != 0 {
		return "", fmt.Errorf("%s: %s: mode %v: only permission bits can be set", h.name, what, mode)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	var nonce [6]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	tmp := path.Join(path.Dir(dst), "."+path.Base(dst)+".testbed-"+hex.EncodeToString(nonce[:]))
	out, err := h.do(ctx, what, opUpload, data, dst, tmp, fmt.Sprintf("%04o", uint32(mode.Perm())), want)
	if err != nil {
		return "", err
	}
	if got := keyValues(out)["sha256"]; got != want {
		return "", fmt.Errorf("%s: %s: the host reports sha256 %q for the %d bytes sent, expected %s", h.name, what, got, len(data), want)
	}
	return want, nil
}
