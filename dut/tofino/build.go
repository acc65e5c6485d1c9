package tofino

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// SourceHash is the hash Build reports for files: sha256 over each path
// (sorted), a NUL, its sha256 in hex, a newline, as
// `find | sort | xargs sha256sum` would list them.
func SourceHash(files map[string][]byte) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var list strings.Builder
	for _, p := range paths {
		h := sha256.Sum256(files[p])
		fmt.Fprintf(&list, "%s  ./%s\n", hex.EncodeToString(h[:]), p)
	}
	h := sha256.Sum256([]byte(list.String()))
	return hex.EncodeToString(h[:])
}

// BuildProgram uploads a program's sources to ~/.testbed/p4/<program> on
// the switch, compiles main there with the SDE's bf-p4c for Tofino (TNA)
// and installs the result where run_switchd.sh -p <program> finds it. The
// compiler's errors come back in the error. It does not restart switchd.
func (s *Switch) BuildProgram(ctx context.Context, program, main string, files map[string][]byte) (Build, error) {
	b := Build{Program: program}
	if !validName(program) {
		return b, fmt.Errorf("build: program name %q (expected letters, digits, _ and -)", program)
	}
	if _, ok := files[main]; !ok {
		return b, fmt.Errorf("build %s: main file %s is not among the sources", program, main)
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	paths := make([]string, 0, len(files))
	for p := range files {
		if path.IsAbs(p) || strings.HasPrefix(path.Clean(p), "..") || strings.ContainsAny(p, "'\n") {
			return b, fmt.Errorf("build %s: source path %q (expected a relative path inside the program's directory)", program, p)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(files[p])), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return b, err
		}
		if _, err := tw.Write(files[p]); err != nil {
			return b, err
		}
	}
	if err := tw.Close(); err != nil {
		return b, err
	}
	start := time.Now()
	dir := `"$HOME/.testbed/p4/` + program + `"`
	out, err := s.sh(ctx, "p4-upload", fmt.Sprintf(`rm -rf %[1]s && mkdir -p %[1]s && tar -x -C %[1]s && cd %[1]s && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1`, dir), tb.Bytes())
	if err != nil {
		return b, fmt.Errorf("build %s: upload: %w", program, err)
	}
	b.SourceSHA256 = strings.TrimSpace(out)
	if want := SourceHash(files); b.SourceSHA256 != want {
		return b, fmt.Errorf("build %s: the switch has sources with hash %q, uploaded %s", program, truncate(b.SourceSHA256, 80), want)
	}
	// bf-p4c names its output after the main file; the .conf it writes
	// points into the build directory, so the installed copy is rewritten
	// to the install location (as the SDE's own p4_build.sh does).
	out, err = s.sh(ctx, "p4-build", fmt.Sprintf(`# program=%[2]s main=%[3]s
dir=%[1]s; out="$dir/build"; name=%[4]s
rm -rf "$out" && mkdir -p "$out"
if ! "$SDE_INSTALL/bin/bf-p4c" --std p4-16 --target tofino --arch tna -g -o "$out" --bf-rt-schema "$out/bf-rt.json" -I "$dir" "$dir/%[3]s" > "$dir/build.log" 2>&1; then
  tail -n 40 "$dir/build.log" >&2; exit 1
fi
conf="$out/$name.conf"
[ -f "$conf" ] || { echo "bf-p4c wrote no $name.conf in $out" >&2; exit 1; }
inst="$SDE_INSTALL/share/tofinopd/%[2]s"
rm -rf "$inst" && mkdir -p "$inst" "$SDE_INSTALL/share/p4/targets/tofino" && cp -r "$out"/. "$inst"/
sed "s#$out#$inst#g" "$conf" > "$SDE_INSTALL/share/p4/targets/tofino/%[2]s.conf"
echo "conf=$SDE_INSTALL/share/p4/targets/tofino/%[2]s.conf"
tail -n 5 "$dir/build.log"`, dir, program, main, strings.TrimSuffix(path.Base(main), ".p4")), nil)
	b.Duration = time.Since(start)
	if err != nil {
		return b, fmt.Errorf("build %s: bf-p4c: %w", program, err)
	}
	kv := keyValues(out)
	b.Conf = kv["conf"]
	if b.Conf == "" {
		return b, fmt.Errorf("build %s: unexpected answer %q", program, truncate(out, 300))
	}
	if i := strings.Index(out, "\n"); i >= 0 {
		b.Log = strings.TrimSpace(out[i+1:])
	}
	return b, nil
}
