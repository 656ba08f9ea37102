package dist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// Install says where Install puts the daemon's files and what it does
// with its units.
type Install struct {
	// Binary is the unitrun binary to install, as BinDir/unitrun.
	Binary string
	// BinDir, UnitDir and DBusDir are the directories of the binary, of
	// the units and the D-Bus data dir (its system.d and system-services
	// subdirectories); DBusDir "" installs no D-Bus files.
	BinDir, UnitDir, DBusDir string
	// Runtime enables the sockets until reboot only (in /run).
	Runtime bool
	// Now also starts the sockets.
	Now bool
}

// InstalledPath is the path of the installed binary: BinDir/unitrun.
func (in *Install) InstalledPath() string { return filepath.Join(in.BinDir, "unitrun") }

// dbusFiles maps each file of DBus to its directory under the D-Bus data
// dir: the system bus's policy and activation files. The bus daemon
// notices new files there by itself.
var dbusFiles = map[string]string{
	"org.unitrun.Ops1.conf":    "system.d",
	"org.unitrun.Ops1.service": "system-services",
}

// Install copies the binary, writes DaemonUnits (run from the installed
// binary) and the D-Bus files, reloads mgr, enables the sockets and, with
// Now, starts them, waiting for their start jobs: a socket that cannot
// listen is an error here, not a surprise later.
func (in *Install) Install(ctx context.Context, mgr *manager.Conn) error {
	bin := in.InstalledPath()
	if err := copyBinary(in.Binary, bin); err != nil {
		return fmt.Errorf("install %s: %w", bin, err)
	}
	for _, name := range DaemonUnits {
		text, err := fs.ReadFile(Systemd, "systemd/"+name)
		if err != nil {
			return err
		}
		text = bytes.ReplaceAll(text, []byte(InstalledBinary+" "), []byte(bin+" "))
		p := filepath.Join(in.UnitDir, name)
		if err := atomicfile.Write(p, text, 0o644); err != nil {
			return fmt.Errorf("install %s: %w", p, err)
		}
	}
	if in.DBusDir != "" {
		if err := installDBus(in.DBusDir); err != nil {
			return err
		}
	}
	if err := mgr.Reload(ctx); err != nil {
		return err
	}
	sockets := DaemonUnits[:2]
	if err := mgr.EnableUnitFiles(ctx, sockets, in.Runtime); err != nil {
		return fmt.Errorf("enable %s: %w", strings.Join(sockets, ", "), err)
	}
	if in.Now {
		for _, s := range sockets {
			if _, err := job.Unit(mgr, s).Run(ctx); err != nil {
				return fmt.Errorf("start %s: %w", s, err)
			}
		}
	}
	return nil
}

// Uninstall stops and disables the units, removes them, their socket
// files, the binary and the D-Bus files, and reloads mgr. What is already
// gone is not an error.
func (in *Install) Uninstall(ctx context.Context, mgr *manager.Conn) error {
	var errs []error
	for _, name := range DaemonUnits {
		if _, err := mgr.StopUnit(ctx, name, "replace"); err != nil && !manager.IsNoSuchUnit(err) {
			errs = append(errs, fmt.Errorf("stop %s: %w", name, err))
		}
	}
	if err := mgr.DisableUnitFiles(ctx, DaemonUnits[:2], in.Runtime); err != nil {
		errs = append(errs, fmt.Errorf("disable: %w", err))
	}
	for _, name := range DaemonUnits {
		p := filepath.Join(in.UnitDir, name)
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
	if err := os.Remove(in.InstalledPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if in.DBusDir != "" {
		errs = append(errs, uninstallDBus(in.DBusDir))
	}
	errs = append(errs, mgr.Reload(ctx))
	return errors.Join(errs...)
}

// installDBus writes the D-Bus files under dir.
func installDBus(dir string) error {
	for name, sub := range dbusFiles {
		data, err := fs.ReadFile(DBus, "dbus/"+name)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, sub, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("install %s: %w", p, err)
		}
		if err := atomicfile.Write(p, data, 0o644); err != nil {
			return fmt.Errorf("install %s: %w", p, err)
		}
	}
	return nil
}

// uninstallDBus removes the D-Bus files under dir; what is already gone
// is not an error.
func uninstallDBus(dir string) error {
	var errs []error
	for name, sub := range dbusFiles {
		if err := os.Remove(filepath.Join(dir, sub, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
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
