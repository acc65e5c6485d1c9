package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"testbed/orchestrator"
)

// app is the state one invocation shares between commands: configuration
// from file, TESTBED_* environment variables and flags (flags win).
type app struct {
	v      *viper.Viper
	stdout io.Writer
	stderr io.Writer

	stateOnce sync.Once
	state     string
	// sig is the process's signal handler (nil in-process: each run then
	// catches signals itself while it runs).
	sig *signals
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root, _ := newRootApp(stdout, stderr, nil)
	return root
}

func newRootApp(stdout, stderr io.Writer, sig *signals) (*cobra.Command, *app) {
	a := &app{v: viper.New(), stdout: stdout, stderr: stderr, sig: sig}
	root := &cobra.Command{
		Use:   "testbed",
		Short: "Run experiments on an optical/switching testbed, or on the simulated lab",
		Long: `testbed drives the instruments and devices of an optical/switching testbed, runs
experiment recipes on them and writes every run into a verifiable result bundle.
With no --inventory, every command uses the built-in simulated lab.

Configuration comes from flags, TESTBED_* environment variables (TESTBED_INVENTORY,
TESTBED_RUNS_DIR, TESTBED_STATE_DIR, TESTBED_OUTPUT, TESTBED_LOG_LEVEL, TESTBED_LEASES) and a config file
(--config, else ./testbed.yaml, else $XDG_CONFIG_HOME/testbed/config.yaml), in that order
of precedence.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.loadConfig(cmd)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.String("config", "", "config file (YAML)")
	pf.String("runs-dir", "runs", "directory bundles are written under")
	pf.String("state-dir", "", "directory for device leases and undo journals (default "+orchestrator.HostStateDir+" when usable, else $XDG_STATE_HOME/testbed)")
	pf.StringP("output", "o", "text", "output format: text or json (exp show: also markdown)")
	pf.String("log-level", "warn", "log level: debug, info, warn, error")
	pf.String("leases", "", "where device leases live: etcd://host:2379[,host2:2379]/prefix (etcds:// for TLS), default lease files under the state directory")
	pf.String("leases-cert", "", "TLS client certificate file for etcd leases")
	pf.String("leases-key", "", "TLS client key file for etcd leases")
	pf.String("leases-ca", "", "CA certificate file that signed the etcd servers' certificates")
	pf.Duration("lease-ttl", 30*time.Second, "etcd leases: how long after a holder dies (or is cut off) its devices go to the next in the queue")
	for _, k := range []string{"runs-dir", "state-dir", "output", "log-level", "leases", "leases-cert", "leases-key", "leases-ca", "lease-ttl"} {
		_ = a.v.BindPFlag(strings.ReplaceAll(k, "-", "_"), pf.Lookup(k))
	}
	root.AddCommand(a.expCmd(), a.labCmd(), a.inventoryCmd(), a.resultsCmd(), a.switchCmd(), a.voaCmd(), a.monitorCmd(), a.serveCmd(), a.versionCmd(), a.genDocsCmd())
	a.extend(root)
	return root, a
}

// stateDir is where leases and undo journals live: --state-dir,
// TESTBED_STATE_DIR or the config file, else the host-wide default (with a
// warning when it cannot be used).
func (a *app) stateDir() string {
	if d := a.v.GetString("state_dir"); d != "" {
		return d
	}
	a.stateOnce.Do(func() {
		var warning string
		a.state, warning = orchestrator.DefaultStateDir()
		if warning != "" {
			fmt.Fprintf(a.stderr, "testbed: warning: %s\n", warning)
		}
	})
	return a.state
}

func (a *app) loadConfig(cmd *cobra.Command) error {
	a.v.SetEnvPrefix("TESTBED")
	a.v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	a.v.AutomaticEnv()
	f, _ := cmd.Flags().GetString("config")
	if f == "" {
		f = findConfig()
	}
	if f != "" {
		a.v.SetConfigFile(f)
		if err := a.v.ReadInConfig(); err != nil {
			return &exitError{code: exitBadInput, err: fmt.Errorf("config %s: %w", f, err)}
		}
	}
	switch o := a.v.GetString("output"); {
	case o == "text", o == "json":
	case o == "markdown" && cmd.CommandPath() == "testbed exp show":
	default:
		return &exitError{code: exitBadInput, err: fmt.Errorf("--output %q: expected text or json (markdown for exp show)", o)}
	}
	return nil
}

// findConfig returns ./testbed.yaml, else $XDG_CONFIG_HOME/testbed/config.yaml
// (or the platform's equivalent), else "".
func findConfig() string {
	candidates := []string{"testbed.yaml"}
	if d, err := os.UserConfigDir(); err == nil {
		candidates = append(candidates, filepath.Join(d, "testbed", "config.yaml"))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c
		}
	}
	return ""
}

func (a *app) json() bool { return a.v.GetString("output") == "json" }

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonShape(v))
}

func (a *app) logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(a.v.GetString("log_level"))); err != nil {
		lvl = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: lvl}))
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.json() {
				return a.printJSON(map[string]string{"version": version})
			}
			fmt.Fprintln(a.stdout, "testbed", version)
			return nil
		},
	}
}
