package host

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// AgentSource says where a hostagent binary for a host's architecture
// comes from. When the Go toolchain and the testbed module's source (with
// cmd/hostagent) are both at hand, the binary is built for linux/<GOARCH>
// with CGO_ENABLED=0 and cached by version and architecture; otherwise
// Prebuilt names a ready binary per GOARCH (inventory options
// hostagent_<goarch>, see PrebuiltOption).
type AgentSource struct {
	// ModuleDir is the root of the testbed module; "" looks for it from
	// the working directory upwards.
	ModuleDir string
	// Go is the go command (default "go" on PATH).
	Go string
	// CacheDir holds built binaries as <version>/<goarch>/hostagent
	// (default <user cache dir>/testbed/hostagent).
	CacheDir string
	// Prebuilt maps a GOARCH to a local hostagent binary for linux/GOARCH.
	Prebuilt map[string]string
	// Version is the version a prebuilt binary must report; a built one
	// reports the source's hostagent.Version.
	Version string
}

// PrebuiltOption is the inventory option naming a prebuilt hostagent for
// goarch ("hostagent_arm64").
func PrebuiltOption(goarch string) string { return "hostagent_" + goarch }

// Binary returns a hostagent for linux/goarch: built from source when it
// can be, else the prebuilt one. The error says why neither worked.
func (s AgentSource) Binary(ctx context.Context, goarch string) (AgentBinary, error) {
	var why []string
	goTool, goErr := exec.LookPath(or(s.Go, "go"))
	mod, modErr := s.moduleDir()
	switch {
	case goErr == nil && modErr == nil:
		b, err := s.build(ctx, goTool, mod, goarch)
		if err == nil {
			return b, nil
		}
		return AgentBinary{}, fmt.Errorf("hostagent for linux/%s: %w", goarch, err)
	case goErr != nil:
		why = append(why, fmt.Sprintf("cannot build it: no Go toolchain (%v)", goErr))
	default:
		why = append(why, fmt.Sprintf("cannot build it: %v", modErr))
	}
	if p := s.Prebuilt[goarch]; p != "" {
		if _, err := os.Stat(p); err != nil {
			return AgentBinary{}, fmt.Errorf("hostagent for linux/%s: %s; the prebuilt binary (%s): %w", goarch, strings.Join(why, "; "), PrebuiltOption(goarch), err)
		}
		return AgentBinary{Path: p, Version: s.Version}, nil
	}
	why = append(why, fmt.Sprintf("no prebuilt binary given (inventory option %s)", PrebuiltOption(goarch)))
	return AgentBinary{}, fmt.Errorf("no hostagent for linux/%s: %s", goarch, strings.Join(why, "; "))
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// moduleDir finds the testbed module with the hostagent's main package.
func (s AgentSource) moduleDir() (string, error) {
	if s.ModuleDir != "" {
		if err := isAgentModule(s.ModuleDir); err != nil {
			return "", err
		}
		return s.ModuleDir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("no module source: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if err := isAgentModule(d); err != nil {
				return "", err
			}
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no module source: no go.mod in %s or above", wd)
		}
	}
}

func isAgentModule(dir string) error {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("no module source: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	module := ""
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			module = strings.Trim(strings.TrimSpace(rest), `"`)
			break
		}
	}
	if module != "testbed" {
		return fmt.Errorf("no module source: %s is module %q, not testbed", dir, module)
	}
	mains, _ := filepath.Glob(filepath.Join(dir, "cmd", "hostagent", "*.go"))
	if len(mains) == 0 {
		return fmt.Errorf("no module source: %s has no cmd/hostagent", dir)
	}
	return nil
}

// build compiles cmd/hostagent for linux/goarch into the cache, unless the
// cache holds a binary built from the same inputs (sources of every package
// of the module it uses, go.mod, go.sum, toolchain).
func (s AgentSource) build(ctx context.Context, goTool, mod, goarch string) (AgentBinary, error) {
	version := sourceVersion(mod)
	env := append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	fp, err := s.fingerprint(ctx, goTool, mod, env)
	if err != nil {
		return AgentBinary{}, err
	}
	cache := s.CacheDir
	if cache == "" {
		uc, err := os.UserCacheDir()
		if err != nil {
			return AgentBinary{}, fmt.Errorf("cache directory: %w", err)
		}
		cache = filepath.Join(uc, "testbed", "hostagent")
	}
	dir := filepath.Join(cache, sanitize(or(version, "dev")), goarch)
	bin := filepath.Join(dir, "hostagent")
	stamp := bin + ".inputs"
	if got, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(got)) == fp {
		if data, err := os.ReadFile(bin); err == nil {
			return AgentBinary{Data: data, Path: bin, Version: version}, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return AgentBinary{}, fmt.Errorf("cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".hostagent-*")
	if err != nil {
		return AgentBinary{}, fmt.Errorf("cache: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", tmp.Name(), "./cmd/hostagent")
	cmd.Dir, cmd.Env = mod, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return AgentBinary{}, fmt.Errorf("go build ./cmd/hostagent (GOOS=linux GOARCH=%s CGO_ENABLED=0) in %s: %w\n%s", goarch, mod, err, strings.TrimSpace(out.String()))
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return AgentBinary{}, fmt.Errorf("cache: %w", err)
	}
	if err := os.WriteFile(stamp, []byte(fp+"\n"), 0o644); err != nil {
		return AgentBinary{}, fmt.Errorf("cache: %w", err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return AgentBinary{}, fmt.Errorf("cache: %w", err)
	}
	return AgentBinary{Data: data, Path: bin, Version: version}, nil
}

// fingerprint hashes what the build depends on: the toolchain version,
// go.mod and go.sum, and every file of each of the module's own packages
// cmd/hostagent imports (other modules are pinned by go.sum).
func (s AgentSource) fingerprint(ctx context.Context, goTool, mod string, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, goTool, "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./cmd/hostagent")
	cmd.Dir, cmd.Env = mod, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list ./cmd/hostagent in %s: %w\n%s", mod, err, strings.TrimSpace(stderr.String()))
	}
	ver, err := exec.CommandContext(ctx, goTool, "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "toolchain %s\n", strings.TrimSpace(string(ver)))
	files := []string{filepath.Join(mod, "go.mod"), filepath.Join(mod, "go.sum")}
	for _, d := range strings.Fields(string(out)) {
		ents, err := os.ReadDir(d)
		if err != nil {
			return "", err
		}
		for _, e := range ents {
			if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), "_test.go") {
				files = append(files, filepath.Join(d, e.Name()))
			}
		}
	}
	sort.Strings(files)
	for _, f := range files {
		fh, err := os.Open(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(mod, f)
		fmt.Fprintf(h, "file %s\n", filepath.ToSlash(rel))
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sourceVersion reads the constant hostagent.Version from the module's
// source ("" when there is none): what the built binary will report.
func sourceVersion(mod string) string {
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join(mod, "hostagent", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		for _, decl := range af.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name != "Version" || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, err := strconv.Unquote(lit.Value); err == nil {
							return v
						}
					}
				}
			}
		}
	}
	return ""
}

// sanitize makes a version usable as a directory name.
func sanitize(v string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r == '+' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, v)
}
