package results

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// PackTime is the modification time every entry of a packed bundle gets:
// the run's end time (its start time if it never ended), to the second, or
// the Unix epoch when the manifest has neither.
func PackTime(m Manifest) time.Time {
	switch {
	case m.Ended != nil && !m.Ended.IsZero():
		return m.Ended.UTC().Truncate(time.Second)
	case !m.Started.IsZero():
		return m.Started.UTC().Truncate(time.Second)
	}
	return time.Unix(0, 0).UTC()
}

// Pack writes the bundle directory dir as a reproducible .tar.gz at out,
// which must not exist. The same bundle always packs to the same bytes,
// wherever its directory is and whoever owns it:
//   - one top directory named by the run id, then the files sorted by path,
//     each directory just before its contents;
//   - every entry's mtime is PackTime of the manifest; uid and gid 0, no
//     user or group names; mode 0755 for directories, 0644 for files;
//   - the gzip header carries no file name and no time.
//
// SHA256SUMS.sig is packed when present. A bundle that does not verify is
// refused: an archive is for keeping, and it would not verify either.
func Pack(dir, out string) error {
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	err = PackTo(f, dir)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		if !strings.HasPrefix(err.Error(), "pack ") {
			err = fmt.Errorf("pack %s: %w", dir, err)
		}
		return err
	}
	return nil
}

// PackTo writes the reproducible .tar.gz of the bundle directory dir to w.
func PackTo(w io.Writer, dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("pack %s: not a bundle directory", dir)
	}
	rep, err := Verify(dir)
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	if !rep.OK {
		return fmt.Errorf("pack %s: the bundle does not verify, refusing to archive it: %s", dir, strings.Join(rep.Problems, "; "))
	}
	rd, err := Open(dir)
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	top := rd.Manifest.RunID
	if top == "" || strings.ContainsAny(top, `/\`) || top == "." || top == ".." {
		return fmt.Errorf("pack %s: manifest.json: run id %q cannot name the archive's top directory", dir, top)
	}
	mtime := PackTime(rd.Manifest)
	files, err := listFiles(os.DirFS(dir))
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	// gzip.Writer leaves Name empty and writes MTIME 0 for a zero ModTime.
	tw := tar.NewWriter(zw)
	hdr := func(name string, typ byte, mode, size int64) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: mtime}
	}
	seen := map[string]bool{}
	var dirEntry func(d string) error
	dirEntry = func(d string) error {
		if seen[d] {
			return nil
		}
		if p := path.Dir(d); p != "." {
			if err := dirEntry(p); err != nil {
				return err
			}
		}
		seen[d] = true
		return tw.WriteHeader(hdr(top+"/"+d+"/", tar.TypeDir, 0o755, 0))
	}
	werr := tw.WriteHeader(hdr(top+"/", tar.TypeDir, 0o755, 0))
	for _, name := range files {
		if werr != nil {
			break
		}
		if d := path.Dir(name); d != "." {
			if werr = dirEntry(d); werr != nil {
				break
			}
		}
		werr = packFile(tw, dir, name, hdr(top+"/"+name, tar.TypeReg, 0o644, 0))
	}
	if err := errors.Join(werr, tw.Close(), zw.Close()); err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	return nil
}

func packFile(tw *tar.Writer, dir, name string, h *tar.Header) error {
	p := filepath.Join(dir, filepath.FromSlash(name))
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s); a bundle holds regular files only", name, fi.Mode().Type())
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	h.Size = fi.Size()
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n != h.Size {
		return fmt.Errorf("%s: changed size while being packed", name)
	}
	return nil
}
