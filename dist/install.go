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
	"github.com/unitrun/unitrun/internal/pullexec"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
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

// Install copies the binary (and the binaries beside it: installBeside), writes DaemonUnits (run from the installed
// binary), the D-Bus files and the man pages, creating the directories
// they go to, reloads mgr, enables the sockets and, with Now, starts
// them, waiting for their start jobs: a socket that cannot listen is an
// error here, not a surprise later. If a step fails, Install takes back
// what it did before: the files it wrote are removed (or hold what they
// held before), the directories it created are removed, and sockets it
// enabled are stopped and disabled again.
func (in *Install) Install(ctx context.Context, mgr *manager.Conn) (err error) {
	var w written
	defer func() {
		if err != nil {
			if uerr := w.undo(context.WithoutCancel(ctx), mgr); uerr != nil {
				err = fmt.Errorf("%w; taking back what was installed: %w", err, uerr)
			}
		}
	}()
	self, err := os.ReadFile(in.Binary)
	if err != nil {
		return err
	}
	bin := in.InstalledPath()
	if err := w.file(bin, self, 0o755); err != nil {
		return err
	}
	if err := in.installBeside(&w); err != nil {
		return err
	}
	for _, name := range DaemonUnits {
		text, err := fs.ReadFile(Systemd, "systemd/"+name)
		if err != nil {
			return err
		}
		text = bytes.ReplaceAll(text, []byte(InstalledBinary+" "), []byte(bin+" "))
		if err := w.file(filepath.Join(in.UnitDir, name), text, 0o644); err != nil {
			return err
		}
	}
	for name, dir := range in.dbusFiles() {
		data, err := fs.ReadFile(DBus, "dbus/"+name)
		if err != nil {
			return err
		}
		if err := w.file(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := in.installMan(&w); err != nil {
		return err
	}
	if err := mgr.Reload(ctx); err != nil {
		return err
	}
	sockets := DaemonUnits[:2]
	// Whether the sockets were enabled before; a state that cannot be
	// read counts as not enabled.
	state, _ := mgr.UnitFileState(ctx, sockets[0])
	if err := mgr.EnableUnitFiles(ctx, sockets, in.Runtime); err != nil {
		return fmt.Errorf("enable %s: %w", strings.Join(sockets, ", "), err)
	}
	if !strings.HasPrefix(state, "enabled") {
		w.enabled, w.runtime = sockets, in.Runtime
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

// installBeside copies the small binaries beside the binary, each where
// Binary has it beside it, to beside the installed binary, and otherwise
// removes one installed there before, which belongs to an earlier unitrun:
// the hook that pods run at each start and exit of an app (pod.HookPath;
// without it pods run unitrun itself as that hook) and the puller of
// images (pullexec.Path; without it unitrun pulls no images).
func (in *Install) installBeside(w *written) error {
	for _, path := range []func(string) string{pod.HookPath, pullexec.Path} {
		dst, src := path(in.InstalledPath()), path(in.Binary)
		if fi, err := os.Stat(src); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			if err := w.remove(dst); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := w.file(dst, data, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// written is what Install has put in place so far, for undo.
type written struct {
	files []oldFile // in the order written
	dirs  []string  // created, each after its parent
	// enabled are the sockets Install enabled (they were not before),
	// runtime whether until reboot only.
	enabled []string
	runtime bool
}

// oldFile is a file Install wrote and what it held before: nil data if
// it did not exist.
type oldFile struct {
	path string
	data []byte
	mode fs.FileMode
}

// file writes data to path atomically, creating its directory, unless it
// already holds data, and remembers what it held.
func (w *written) file(path string, data []byte, mode fs.FileMode) error {
	if err := w.mkdir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	old := oldFile{path: path}
	if fi, err := os.Stat(path); err == nil {
		if old.data, err = os.ReadFile(path); err != nil {
			return fmt.Errorf("install %s: %w", path, err)
		}
		if bytes.Equal(old.data, data) {
			return nil
		}
		old.mode = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("install %s: %w", path, err)
	}
	if err := atomicfile.Write(path, data, mode); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	w.files = append(w.files, old)
	return nil
}

// remove removes the file at path, if there is one, and remembers what it
// held.
func (w *written) remove(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	old := oldFile{path: path, mode: fi.Mode().Perm()}
	if old.data, err = os.ReadFile(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	w.files = append(w.files, old)
	return nil
}

// mkdir creates dir and its missing parents, and remembers those it
// created.
func (w *written) mkdir(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		w.dirs = append(w.dirs, missing[i])
	}
	return nil
}

// undo stops and disables the sockets w enabled, puts back what the
// files it wrote held (removing those that did not exist), removes the
// directories it created and reloads mgr.
func (w *written) undo(ctx context.Context, mgr *manager.Conn) error {
	var errs []error
	if w.enabled != nil {
		for _, s := range w.enabled {
			if _, err := mgr.StopUnit(ctx, s, "replace"); err != nil && !manager.IsNoSuchUnit(err) {
				errs = append(errs, fmt.Errorf("stop %s: %w", s, err))
			}
		}
		if err := mgr.DisableUnitFiles(ctx, w.enabled, w.runtime); err != nil {
			errs = append(errs, fmt.Errorf("disable %s: %w", strings.Join(w.enabled, ", "), err))
		}
	}
	for i := len(w.files) - 1; i >= 0; i-- {
		f := w.files[i]
		if f.data == nil {
			errs = append(errs, removeFile(f.path))
		} else if err := atomicfile.Write(f.path, f.data, f.mode); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(w.dirs) - 1; i >= 0; i-- {
		errs = append(errs, os.Remove(w.dirs[i]))
	}
	errs = append(errs, mgr.Reload(ctx))
	return errors.Join(errs...)
}

// Uninstall stops and disables the units, removes them, their socket
// files, the binary and its hook, the D-Bus files and unitrun's man pages in ManDir,
// and reloads mgr. What is already
// gone is not an error.
func (in *Install) Uninstall(ctx context.Context, mgr *manager.Conn) error {
	var errs []error
	for _, name := range DaemonUnits {
		if _, err := mgr.StopUnit(ctx, name, "replace"); err != nil && !manager.IsNoSuchUnit(err) {
			errs = append(errs, fmt.Errorf("stop %s: %w", name, err))
		}
	}
	// systemd refuses to disable a unit file that is not there: one that
	// is gone needs no disabling.
	var sockets []string
	for _, name := range DaemonUnits[:2] {
		if _, err := os.Lstat(filepath.Join(in.UnitDir, name)); err == nil {
			sockets = append(sockets, name)
		}
	}
	if len(sockets) > 0 {
		if err := mgr.DisableUnitFiles(ctx, sockets, in.Runtime); err != nil {
			errs = append(errs, fmt.Errorf("disable: %w", err))
		}
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
	errs = append(errs, removeFile(in.InstalledPath()), removeFile(pod.HookPath(in.InstalledPath())), removeFile(pullexec.Path(in.InstalledPath())))
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

// installMan copies the unitrun man pages of ManSource to ManDir, with w.
func (in *Install) installMan(w *written) error {
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
		if err := w.file(filepath.Join(in.ManDir, rel), data, 0o644); err != nil {
			return err
		}
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
