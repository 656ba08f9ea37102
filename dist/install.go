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
	// BinDir and UnitDir are the directories of the binary and of the
	// units.
	BinDir, UnitDir string
	// DBusPolicyDir and DBusServiceDir are the system bus's policy dir
	// (a system.d) and its activation dir (a system-services); "" installs
	// no D-Bus files.
	DBusPolicyDir, DBusServiceDir string
	// ManSource is a man page tree (man1, man5, man8: the release's man
	// directory) whose unitrun pages Install copies to the tree ManDir;
	// either "" or a ManSource that does not exist installs none.
	ManSource, ManDir string
	// Runtime enables the sockets until reboot only (in /run).
	Runtime bool
	// Now also starts the sockets.
	Now bool
}

// InstalledPath is the path of the installed binary: BinDir/unitrun.
func (in *Install) InstalledPath() string { return filepath.Join(in.BinDir, "unitrun") }

// Install copies the binary, writes DaemonUnits (run from the installed
// binary), the D-Bus files and the man pages, reloads mgr, enables the sockets and, with
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
	for name, dir := range in.dbusFiles() {
		data, err := fs.ReadFile(DBus, "dbus/"+name)
		if err != nil {
			return err
		}
		if err := installFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := in.installMan(); err != nil {
		return err
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
// files, the binary, the D-Bus files and unitrun's man pages in ManDir,
// and reloads mgr. What is already
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
	errs = append(errs, removeFile(in.InstalledPath()))
	for name, dir := range in.dbusFiles() {
		errs = append(errs, removeFile(filepath.Join(dir, name)))
	}
	if in.ManDir != "" {
		pages, _ := filepath.Glob(filepath.Join(in.ManDir, "man[158]", "unitrun*.[158]*"))
		for _, p := range pages {
			errs = append(errs, removeFile(p))
		}
	}
	errs = append(errs, mgr.Reload(ctx))
	return errors.Join(errs...)
}

// dbusFiles maps each file of DBus to the directory it goes to: the
// system bus's policy and activation dirs, which the bus daemon watches.
func (in *Install) dbusFiles() map[string]string {
	if in.DBusPolicyDir == "" {
		return nil
	}
	return map[string]string{
		"org.unitrun.Ops1.conf":    in.DBusPolicyDir,
		"org.unitrun.Ops1.service": in.DBusServiceDir,
	}
}

// installMan copies the unitrun man pages of ManSource to ManDir.
func (in *Install) installMan() error {
	if in.ManSource == "" || in.ManDir == "" {
		return nil
	}
	pages, err := filepath.Glob(filepath.Join(in.ManSource, "man[158]", "unitrun*.[158]*"))
	if err != nil {
		return err
	}
	for _, p := range pages {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(in.ManSource, p)
		if err := installFile(filepath.Join(in.ManDir, rel), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// installFile writes data to path atomically, creating its directory.
func installFile(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	if err := atomicfile.Write(path, data, mode); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	return nil
}

// removeFile removes path; one already gone is not an error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
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
