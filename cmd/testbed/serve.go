package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"testbed/inventory"
	"testbed/orchestrator"
	"testbed/serve"
)

func (a *app) serveCmd() *cobra.Command {
	var listen, token, invFile, indexPath string
	var poll time.Duration
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the lab, its runs and the nightly trends as web pages and a JSON API (read-only)",
		Long: `Serve, on 127.0.0.1:8080 by default, pages of the lab (every device, its
identity as last seen, its lease, the queue, pending undo journals; live), the
runs of the runs directory (running ones with live progress read from their
bundles, finished ones with their headline numbers, files and a diff against
the previous run of the recipe), the nightly suites' trends, and the same as
JSON under /api/v1 (docs/serve.md).

Lists and trends come from a run index (SQLite, --index) rebuilt from the
bundles, which stay the truth: bundles added or removed on disk are picked up.
Serving is read-only: it takes no lease, replays no journal, writes no bundle.

Listening beyond loopback needs --listen and a token (--token, or
TESTBED_SERVE_TOKEN): every request then carries "Authorization: Bearer
<token>" (a browser gives ?token=<token> once). Behind the lab's reverse proxy,
keep the default 127.0.0.1 listener (docs/serve.md shows an nginx setup).`,
		Example: `  testbed serve
  testbed serve --inventory lab.yaml --runs-dir /srv/testbed/runs
  testbed serve --inventory lab.yaml --leases etcd://etcd1:2379/lab-a
  TESTBED_SERVE_TOKEN=$(cat /etc/testbed/serve.token) testbed serve --listen 0.0.0.0:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if token == "" {
				token = os.Getenv("TESTBED_SERVE_TOKEN")
			}
			if !serve.IsLoopback(listen) && token == "" {
				return &exitError{code: exitBadInput, err: fmt.Errorf("--listen %s is beyond loopback: give a token (--token or TESTBED_SERVE_TOKEN), or keep 127.0.0.1 behind a reverse proxy", listen)}
			}
			ctx := cmd.Context()
			var inv *inventory.Inventory
			path := invFile
			if path == "" {
				path = a.v.GetString("inventory")
			}
			if path != "" {
				var err error
				if inv, err = inventory.Load(path); err != nil {
					return &orchestrator.InputError{Msg: err.Error()}
				}
			}
			store, err := a.leaseStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			src := serve.LabSource{Inventory: inv, Leases: store, LeasesName: "file"}
			if spec := a.v.GetString("leases"); spec != "" && spec != "file" {
				src.LeasesName = spec
			} else {
				src.JournalDir = filepath.Join(a.stateDir(), "leases")
			}
			runs := a.v.GetString("runs_dir")
			if indexPath == "" {
				indexPath = defaultIndexPath(runs)
			}
			ix, err := serve.OpenIndex(ctx, indexPath, runs, recipeHeadlines)
			if err != nil {
				return err
			}
			defer ix.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &exitError{code: exitBadInput, err: fmt.Errorf("--listen %s: %w", listen, err)}
			}
			srv := serve.New(serve.Options{Index: ix, Lab: src, Token: token, Poll: poll, Log: a.logger(), Version: version})
			fmt.Fprintf(a.stderr, "testbed serve: http://%s/ (runs %s, index %s)\n", ln.Addr(), runs, indexPath)
			sctx, stop := signalContext(ctx)
			defer stop()
			return srv.Serve(sctx, ln)
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to listen on; beyond loopback needs a token")
	c.Flags().StringVar(&token, "token", "", "token every request must carry (default $TESTBED_SERVE_TOKEN)")
	c.Flags().StringVar(&invFile, "inventory", "", "the lab to show (default: the devices the runs used)")
	c.Flags().StringVar(&indexPath, "index", "", "run index database (default: under the user cache directory, one per runs directory)")
	c.Flags().DurationVar(&poll, "poll", time.Second, "how often the runs directory and the leases are looked at again")
	return c
}

// defaultIndexPath is the run index of a runs directory in the user's
// cache directory (it is a cache: the bundles are the truth).
func defaultIndexPath(runs string) string {
	abs, err := filepath.Abs(runs)
	if err != nil {
		abs = runs
	}
	h := sha256.Sum256([]byte(abs))
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "testbed", "index-"+hex.EncodeToString(h[:6])+".sqlite")
}

// signalContext ends on SIGINT/SIGTERM as well as with ctx.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
