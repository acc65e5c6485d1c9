// Command hostagent is the testbed's agent on end hosts: it serves the API of
// package hostagent (hostagent/API.md) on the host's loopback.
//
//	hostagent --version
//	hostagent serve --listen 127.0.0.1:0 --token-file PATH
//
// Every request must carry "Authorization: Bearer <token>", the token being
// the content of the token file (read on every request, so whoever started
// the agent may replace it; the file must not be readable by group or
// others).
// With port 0 the first line on stdout is the bound address
// ("listening 127.0.0.1:41234"), so whoever started the agent learns it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"testbed/hostagent"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  hostagent --version
  hostagent serve --listen 127.0.0.1:PORT --token-file PATH [--log-level info]
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "--version", "-version", "version":
		fmt.Fprintf(stdout, "hostagent %s\n", hostagent.Version)
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve":
		if err := serve(ctx, args[1:], stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "hostagent: %v\n", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "hostagent: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address of the API (port 0: any free port)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	tokenFile := fs.String("token-file", "", "file holding the token requests must carry (mode 0600; required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected arguments %q", fs.Args())
	}
	if err := checkLoopback(*listen); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level %q: %v", *level, err)
	}
	if *tokenFile == "" {
		return errors.New("serve: --token-file is required: the agent serves only requests carrying its run's token")
	}
	if _, err := readToken(*tokenFile); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	agent := hostagent.New(hostagent.Options{Logger: log, Token: func() (string, error) { return readToken(*tokenFile) }})
	defer agent.Close()
	so := hostagent.ServerOptions{Log: log}
	srv := hostagent.NewServer(agent.Handler(), so)
	ln = hostagent.LimitConnsPerClient(ln, so)
	fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
	log.Info("hostagent serving", "version", hostagent.Version, "addr", ln.Addr().String())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("hostagent stopping")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkLoopback refuses API addresses off the loopback: the agent is
// reached through a forwarded SSH channel (and asks every request for the
// run's token besides).
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: the API listens on a loopback address only (e.g. 127.0.0.1:0)", addr)
	}
	return nil
}

// readToken reads the token file, refusing one that group or others may
// read or that holds no token.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s: mode %v: want a regular file only its owner can read (0600)", path, st.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s: empty", path)
	}
	return tok, nil
}
