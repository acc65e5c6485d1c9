package simlab

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testbed/simlab/ocs"
	"testbed/simlab/voa"
	"testbed/simlab/world"
	"testing"
	"time"
)

// golden is a recorded exchange: lines sent ("> ") and the exact replies
// expected ("< "), each ending in the file's eol.
type golden struct {
	eol, sendEOL string
	steps        []goldenStep
}

type goldenStep struct {
	send   bool
	text   string
	lineNo int
}

func loadGolden(t *testing.T, name string) golden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	g := golden{eol: "\n"}
	unescape := strings.NewReplacer(`\r`, "\r", `\n`, "\n")
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "# eol: "):
			g.eol = unescape.Replace(strings.TrimPrefix(l, "# eol: "))
		case strings.HasPrefix(l, "# send-eol: "):
			g.sendEOL = unescape.Replace(strings.TrimPrefix(l, "# send-eol: "))
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "> "):
			g.steps = append(g.steps, goldenStep{send: true, text: l[2:], lineNo: i + 1})
		case l == "<" || strings.HasPrefix(l, "< "):
			g.steps = append(g.steps, goldenStep{text: strings.TrimPrefix(strings.TrimPrefix(l, "<"), " "), lineNo: i + 1})
		default:
			t.Fatalf("%s:%d: %q: expected '> sent', '< answered' or a # comment", name, i+1, l)
		}
	}
	if g.sendEOL == "" {
		g.sendEOL = g.eol
	}
	return g
}

// replay sends the transcript's lines and compares every reply byte for byte.
func (g golden) replay(t *testing.T, name string, w io.Writer, r *bufio.Reader, deadline func(time.Time)) {
	t.Helper()
	last := g.eol[len(g.eol)-1]
	for _, st := range g.steps {
		if st.send {
			if _, err := w.Write([]byte(st.text + g.sendEOL)); err != nil {
				t.Fatalf("%s:%d: send: %v", name, st.lineNo, err)
			}
			continue
		}
		deadline(time.Now().Add(3 * time.Second))
		got, err := r.ReadBytes(last)
		if err != nil {
			t.Fatalf("%s:%d: waiting for %q: %v (read %q)", name, st.lineNo, st.text, err, got)
		}
		if want := []byte(st.text + g.eol); !bytes.Equal(got, want) {
			t.Errorf("%s:%d: answered %q, want %q", name, st.lineNo, got, want)
		}
	}
}

func TestGoldenN7764A(t *testing.T) {
	v := world.New(1).NewVOA("voa1", "Keysight Technologies", "N7764A", "G1", "1.0", 4, 0, 45, 1.5, 0)
	srv := voa.NewKeysightServer(v, nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	loadGolden(t, "n7764a.txt").replay(t, "n7764a.txt", c, bufio.NewReader(c), func(d time.Time) { c.SetReadDeadline(d) })
}

func TestGoldenPolatis(t *testing.T) {
	srv := ocs.NewPolatisServer(ocs.NewPolatis(world.New(1), "ocs2", ocs.PolatisOptions{Ingress: 16, Egress: 16, SwitchTime: 5 * time.Millisecond}), nil)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	loadGolden(t, "polatis.txt").replay(t, "polatis.txt", c, bufio.NewReader(c), func(d time.Time) { c.SetReadDeadline(d) })
}

func TestGoldenDD100(t *testing.T) {
	v := world.New(1).NewVOA("voa2", "OZ Optics", "DD-100-MC", "OZ1", "3.10", 1, 0, 55, 0.8, 0)
	srv := voa.NewOZOpticsServer(v, nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	f, err := os.OpenFile(srv.Path(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	loadGolden(t, "dd100.txt").replay(t, "dd100.txt", f, bufio.NewReader(f), func(d time.Time) { f.SetReadDeadline(d) })
}
