package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/dist"
	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

type installFlags struct {
	binDir, unitDir string
	runtime, now    bool
	dbusDir         string
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
			err := g.withManager(cmd.Context(), func(mgr *manager.Conn) error { return install(cmd.Context(), mgr, f) })
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			bin := filepath.Join(f.binDir, "unitrun")
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
			err := g.withManager(cmd.Context(), func(mgr *manager.Conn) error { return uninstall(cmd.Context(), mgr, f) })
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

// install copies the binary, writes the units, reloads, enables and, with
// now, starts the sockets.
func install(ctx context.Context, mgr *manager.Conn, f *installFlags) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bin := filepath.Join(f.binDir, "unitrun")
	if err := copyBinary(self, bin); err != nil {
		return fmt.Errorf("install %s: %w", bin, err)
	}
	var paths []string
	for _, name := range dist.DaemonUnits {
		text, err := fs.ReadFile(dist.Systemd, "systemd/"+name)
		if err != nil {
			return err
		}
		text = bytes.ReplaceAll(text, []byte(dist.InstalledBinary+" "), []byte(bin+" "))
		p := filepath.Join(f.unitDir, name)
		if err := atomicfile.Write(p, text, 0o644); err != nil {
			return fmt.Errorf("install %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	if f.dbusDir != "" {
		if err := installDBus(f.dbusDir); err != nil {
			return err
		}
	}
	if err := mgr.Reload(ctx); err != nil {
		return err
	}
	sockets := dist.DaemonUnits[:2]
	if err := mgr.EnableUnitFiles(ctx, sockets, f.runtime); err != nil {
		return fmt.Errorf("enable %s: %w", strings.Join(sockets, ", "), err)
	}
	if f.now {
		// job.Start waits for the start job: a socket that cannot listen
		// is an error here, not a surprise later.
		for _, s := range sockets {
			if _, err := job.Start(ctx, mgr, s); err != nil {
				return fmt.Errorf("start %s: %w", s, err)
			}
		}
	}
	return nil
}

// uninstall stops and disables the units, removes them and the binary, and
// reloads. What is already gone is not an error.
func uninstall(ctx context.Context, mgr *manager.Conn, f *installFlags) error {
	var errs []error
	for _, name := range dist.DaemonUnits {
		if _, err := mgr.StopUnit(ctx, name, "replace"); err != nil && !manager.IsNoSuchUnit(err) {
			errs = append(errs, fmt.Errorf("stop %s: %w", name, err))
		}
	}
	if err := mgr.DisableUnitFiles(ctx, dist.DaemonUnits[:2], f.runtime); err != nil {
		errs = append(errs, fmt.Errorf("disable: %w", err))
	}
	for _, name := range dist.DaemonUnits {
		p := filepath.Join(f.unitDir, name)
		// A stopped socket unit leaves its socket file (RemoveOnStop=no).
		for _, sock := range listenPaths(p) {
			if fi, err := os.Lstat(sock); err == nil && fi.Mode()&fs.ModeSocket != 0 {
				os.Remove(sock)
			}
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(filepath.Join(f.binDir, "unitrun")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if f.dbusDir != "" {
		errs = append(errs, uninstallDBus(f.dbusDir))
	}
	errs = append(errs, mgr.Reload(ctx))
	return errors.Join(errs...)
}

// copyBinary installs src at dst, mode 0755, atomically.
func copyBinary(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return atomicfile.Write(dst, data, 0o755)
}

// listenPaths returns the socket paths a socket unit file listens on.
func listenPaths(unitFile string) []string {
	b, err := os.ReadFile(unitFile)
	if err != nil {
		return nil
	}
	var paths []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, key := range []string{"ListenStream=", "ListenSequentialPacket=", "ListenDatagram="} {
			if p, ok := strings.CutPrefix(line, key); ok && filepath.IsAbs(p) {
				paths = append(paths, p)
			}
		}
	}
	return paths
}
