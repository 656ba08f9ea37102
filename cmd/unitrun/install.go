package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/dist"
	"github.com/unitrun/unitrun/manager"
)

type installFlags struct {
	prefix, binDir, unitDir string
	runtime, now            bool
	dbusDir                 string
}

// readOnlyUsr reports whether /usr is mounted read-only, as on
// image-based hosts (rpm-ostree, Fedora CoreOS, RHEL for Edge).
func readOnlyUsr() bool {
	var st unix.Statfs_t
	return unix.Statfs("/usr", &st) == nil && st.Flags&unix.ST_RDONLY != 0
}

// install returns what install and uninstall do, from the flags, which
// must be absolute paths (--dbus-dir may be ""). The prefix is --prefix,
// else /usr, or /usr/local where /usr is read-only. Under a prefix other than /usr the D-Bus policy goes to
// /etc/dbus-1/system.d, the one other directory the system bus reads
// policies from.
func (f *installFlags) install(cmd *cobra.Command) (*dist.Install, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"prefix", "bin-dir", "unit-dir", "dbus-dir"} {
		fl := cmd.Flags().Lookup(name)
		if v := fl.Value.String(); fl.Changed && !filepath.IsAbs(v) && (v != "" || name != "dbus-dir") {
			return nil, usageError(fmt.Errorf("--%s %q: must be an absolute path", name, v))
		}
	}
	prefix := f.prefix
	switch {
	case prefix == "" && readOnlyUsr():
		prefix = "/usr/local"
	case prefix == "":
		prefix = "/usr"
	}
	prefix = filepath.Clean(prefix)
	in := &dist.Install{Binary: self, BinDir: f.binDir, UnitDir: f.unitDir, Runtime: f.runtime, Now: f.now,
		// The release's tarball has its man pages in man/ beside bin/.
		ManSource: filepath.Join(filepath.Dir(self), "..", "man"), ManDir: filepath.Join(prefix, "share", "man")}
	if in.BinDir == "" {
		in.BinDir = filepath.Join(prefix, "bin")
	}
	switch {
	case cmd.Flags().Changed("dbus-dir") && f.dbusDir == "":
	case cmd.Flags().Changed("dbus-dir"):
		in.DBusPolicyDir, in.DBusServiceDir = filepath.Join(f.dbusDir, "system.d"), filepath.Join(f.dbusDir, "system-services")
	case prefix == "/usr":
		in.DBusPolicyDir, in.DBusServiceDir = "/usr/share/dbus-1/system.d", "/usr/share/dbus-1/system-services"
	default:
		in.DBusPolicyDir, in.DBusServiceDir = "/etc/dbus-1/system.d", filepath.Join(prefix, "share", "dbus-1", "system-services")
	}
	return in, nil
}

func (f *installFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.prefix, "prefix", "", "`PREFIX` of the binary (PREFIX/bin), the D-Bus activation file (PREFIX/share/dbus-1) and the man pages (PREFIX/share/man) (default /usr, or /usr/local where /usr is read-only)")
	cmd.Flags().StringVar(&f.binDir, "bin-dir", "", "directory of the installed binary (default PREFIX/bin)")
	cmd.Flags().StringVar(&f.unitDir, "unit-dir", "/etc/systemd/system", "directory of the installed units")
	cmd.Flags().BoolVar(&f.runtime, "runtime", false, "enable until reboot only (in /run), not persistently")
	cmd.Flags().StringVar(&f.dbusDir, "dbus-dir", "", "D-Bus data `DIR` of org.unitrun.Ops1's system.d policy and system-services file (\"\": none; default /usr/share/dbus-1, or /etc/dbus-1 and PREFIX/share/dbus-1 under another prefix)")
}

func newInstallCmd(g *globals) *cobra.Command {
	f := &installFlags{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install this binary and the host API daemon's units, and enable its sockets",
		Long: `Copy this binary to PREFIX/bin/unitrun (or --bin-dir), with unitrun-hook
(which pods run at each start and exit of an app) and unitrun-pull (which
pulls images) from beside it, if they are there, write unitrun.socket,
unitrun-argv.socket and unitrun.service (from dist/systemd, pointing at the
installed binary) to --unit-dir and the D-Bus policy and activation files
of org.unitrun.Ops1 (dist/dbus), reload the manager and enable the
sockets; with --now, start them. Run from an unpacked release, it also
installs the man pages beside it in PREFIX/share/man. If a step fails,
install takes back what it did before. Ops go in
/etc/unitrun/ops.d (see docs/hostapi.md). "unitrun uninstall" reverses
every step.

PREFIX is /usr, where the D-Bus files go to /usr/share/dbus-1. Where /usr
is read-only (image-based hosts: rpm-ostree, Fedora CoreOS, RHEL for
Edge), it is /usr/local, and the D-Bus policy goes to /etc/dbus-1/system.d;
--prefix chooses another.`,
		Example: "  unitrun install --now\n  unitrun install --prefix /usr/local --runtime",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := f.install(cmd)
			if err != nil {
				return err
			}
			if err := f.checkDirs(cmd, in); err != nil {
				return usageError(err)
			}
			err = g.withManager(cmd.Context(), func(mgr *manager.Conn) error { return in.Install(cmd.Context(), mgr) })
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			bin := in.InstalledPath()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					Binary  string   `json:"binary"`
					Units   []string `json:"units"`
					UnitDir string   `json:"unit_dir"`
					DBusDir string   `json:"dbus_policy_dir,omitempty"`
				}{bin, dist.DaemonUnits, f.unitDir, in.DBusPolicyDir})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s and %s in %s\n", bin, strings.Join(dist.DaemonUnits, ", "), f.unitDir)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&f.now, "now", false, "also start the sockets")
	jsonFlag(cmd, &asJSON, `print {"binary", "units", "unit_dir", "dbus_policy_dir"} as JSON`)
	return cmd
}

func newUninstallCmd(g *globals) *cobra.Command {
	f := &installFlags{}
	cmd := &cobra.Command{
		Use:     "uninstall",
		Short:   "Stop, disable and remove what \"unitrun install\" put in place",
		Example: "  unitrun uninstall\n  unitrun uninstall --prefix /usr/local --runtime",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := f.install(cmd)
			if err != nil {
				return err
			}
			if err := f.checkDirs(cmd, in); err != nil {
				return usageError(err)
			}
			err = g.withManager(cmd.Context(), func(mgr *manager.Conn) error { return in.Uninstall(cmd.Context(), mgr) })
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}

// dirFlag is a directory install writes to and the flag it came from.
type dirFlag struct{ flag, path string }

// checkDirs checks, before anything is written or removed, that the
// directories install writes to (and uninstall removes from) exist:
// --bin-dir, else the prefix (install creates PREFIX/bin), --unit-dir and
// a --dbus-dir given.
func (f *installFlags) checkDirs(cmd *cobra.Command, in *dist.Install) error {
	bin := dirFlag{"--bin-dir", in.BinDir}
	switch {
	case cmd.Flags().Changed("bin-dir"):
	case cmd.Flags().Changed("prefix"):
		bin = dirFlag{"--prefix", filepath.Dir(in.BinDir)}
	default:
		bin = dirFlag{"the default prefix", filepath.Dir(in.BinDir)}
	}
	dirs := []dirFlag{bin, {"--unit-dir", f.unitDir}}
	if f.dbusDir != "" {
		dirs = append(dirs, dirFlag{"--dbus-dir", f.dbusDir})
	}
	for _, d := range dirs {
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
