package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/dist"
	"github.com/unitrun/unitrun/manager"
)

type installFlags struct {
	binDir, unitDir string
	runtime, now    bool
	dbusDir         string
}

// install returns what install and uninstall do, from the flags.
func (f *installFlags) install() (*dist.Install, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return &dist.Install{Binary: self, BinDir: f.binDir, UnitDir: f.unitDir, DBusDir: f.dbusDir, Runtime: f.runtime, Now: f.now}, nil
}

func (f *installFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.binDir, "bin-dir", filepath.Dir(dist.InstalledBinary), "directory of the installed binary")
	cmd.Flags().StringVar(&f.unitDir, "unit-dir", "/etc/systemd/system", "directory of the installed units")
	cmd.Flags().BoolVar(&f.runtime, "runtime", false, "enable until reboot only (in /run), not persistently")
	cmd.Flags().StringVar(&f.dbusDir, "dbus-dir", "/usr/share/dbus-1", "D-Bus data `DIR` of org.unitrun.Ops1's system.d policy and system-services file (\"\": none)")
}

func newInstallCmd(g *globals) *cobra.Command {
	f := &installFlags{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install this binary and the host API daemon's units, and enable its sockets",
		Long: `Copy this binary to --bin-dir/unitrun, write unitrun.socket,
unitrun-argv.socket and unitrun.service (from dist/systemd, pointing at the
installed binary) to --unit-dir and the D-Bus policy and activation files
of org.unitrun.Ops1 (dist/dbus) under --dbus-dir, reload the manager and
enable the sockets; with --now, start them. Ops go in /etc/unitrun/ops.d (see docs/hostapi.md).
"unitrun uninstall" reverses every step.`,
		Example: "  unitrun install --now\n  unitrun install --bin-dir /usr/local/bin --runtime",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.checkDirs(); err != nil {
				return usageError(err)
			}
			in, err := f.install()
			if err == nil {
				err = g.withManager(cmd.Context(), func(mgr *manager.Conn) error { return in.Install(cmd.Context(), mgr) })
			}
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			bin := in.InstalledPath()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					Binary  string   `json:"binary"`
					Units   []string `json:"units"`
					UnitDir string   `json:"unit_dir"`
				}{bin, dist.DaemonUnits, f.unitDir})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s and %s in %s\n", bin, strings.Join(dist.DaemonUnits, ", "), f.unitDir)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&f.now, "now", false, "also start the sockets")
	jsonFlag(cmd, &asJSON, `print {"binary", "units", "unit_dir"} as JSON`)
	return cmd
}

func newUninstallCmd(g *globals) *cobra.Command {
	f := &installFlags{}
	cmd := &cobra.Command{
		Use:     "uninstall",
		Short:   "Stop, disable and remove what \"unitrun install\" put in place",
		Example: "  unitrun uninstall\n  unitrun uninstall --bin-dir /usr/local/bin --runtime",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := f.install()
			if err == nil {
				err = g.withManager(cmd.Context(), func(mgr *manager.Conn) error { return in.Uninstall(cmd.Context(), mgr) })
			}
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// checkDirs checks, before anything is written, that the directories
// install writes to exist.
func (f *installFlags) checkDirs() error {
	for _, d := range []struct{ flag, path string }{{"--bin-dir", f.binDir}, {"--unit-dir", f.unitDir}, {"--dbus-dir", f.dbusDir}} {
		if d.path == "" && d.flag == "--dbus-dir" {
			continue
		}
		fi, err := os.Stat(d.path)
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s %s: not a directory", d.flag, d.path)
		} else if err != nil {
			err = flagPathError(d.flag, d.path, err)
		}
		if err != nil && d.flag == "--dbus-dir" {
			return fmt.Errorf("%w (--dbus-dir \"\" installs no D-Bus files)", err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
