// Package sources hands out the P4 sources a program package embeds, for
// `testbed switch deploy` to upload.
package sources

import "io/fs"

// Files are the files of fsys by their slash-separated path.
func Files(fsys fs.FS) map[string][]byte {
	out := map[string][]byte{}
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	})
	return out
}
