package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// app is the state one invocation shares between commands: configuration
// from file, TESTBED_* environment variables and flags (flags win).
type app struct {
	v      *viper.Viper
	stdout io.Writer
	stderr io.Writer
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	a := &app{v: viper.New(), stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "testbed",
		Short: "Run experiments on an optical/switching testbed, or on the simulated lab",
		Long: `testbed drives the instruments and devices of an optical/switching testbed, runs
experiment recipes on them and writes every run into a verifiable result bundle.
With no --inventory, every command uses the built-in simulated lab.

Configuration comes from flags, TESTBED_* environment variables (TESTBED_INVENTORY,
TESTBED_RUNS_DIR, TESTBED_STATE_DIR, TESTBED_OUTPUT, TESTBED_LOG_LEVEL) and a config file
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
	pf.String("state-dir", defaultStateDir(), "directory for device leases")
	pf.StringP("output", "o", "text", "output format: text or json")
	pf.String("log-level", "warn", "log level: debug, info, warn, error")
	for _, k := range []string{"runs-dir", "state-dir", "output", "log-level"} {
		_ = a.v.BindPFlag(strings.ReplaceAll(k, "-", "_"), pf.Lookup(k))
	}
	root.AddCommand(a.expCmd(), a.labCmd(), a.inventoryCmd(), a.resultsCmd(), a.switchCmd(), a.versionCmd())
	a.extend(root)
	return root
}

func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "testbed")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "testbed")
	}
	return filepath.Join(os.TempDir(), "testbed-state")
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
	switch o := a.v.GetString("output"); o {
	case "text", "json":
	default:
		return &exitError{code: exitBadInput, err: fmt.Errorf("--output %q: expected text or json", o)}
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
