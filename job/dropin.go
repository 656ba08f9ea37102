package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/internal/flock"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// D-Bus strings must be valid UTF-8, so a command line or environment value
// that is not cannot travel in StartTransientUnit's properties. For those,
// unitrun writes the ExecStart= and Environment= settings, escaped by the
// rules of systemd.syntax(7), into a drop-in of the transient unit in the
// manager's transient unit directory, which systemd reads when it creates
// the unit, and again at each daemon-reload or daemon-reexec while the
// unit is loaded: through every restart Restart= makes. systemd removes
// it when it frees the unit, and the run's release removes it too (see
// claim).
//
// A command line with a word that holds '$' or ';' goes the same way:
// systemd 252 writes such words into the transient unit's file escaped
// ("\$", "\;") and, should a daemon-reload read the file back before the
// command is executed, runs them with the escapes in them
// (TestArgvExactAcrossReload). Over D-Bus they are exact otherwise, so
// they go that way when the manager has no transient unit directory.

// needsDropIn reports whether argv or env holds bytes D-Bus cannot carry,
// or argv a word that a daemon-reload would change (see above).
func needsDropIn(args, env []string) bool {
	if !dbusCarries(args, env) {
		return true
	}
	for _, s := range args {
		if strings.ContainsAny(s, "$;") {
			return true
		}
	}
	return false
}

// dbusCarries reports whether argv and env are valid UTF-8, which D-Bus
// strings must be.
func dbusCarries(args, env []string) bool {
	for _, s := range args {
		if !utf8.ValidString(s) {
			return false
		}
	}
	for _, s := range env {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// dropInText renders the drop-in that sets the command line and
// environment. "@" lets argv[0] differ from the path, as the D-Bus
// ExecStart does.
func dropInText(path string, args, env []string) ([]byte, error) {
	words := []string{unit.QuoteArg("@" + path)}
	for _, a := range args {
		words = append(words, unit.QuoteArg(a))
	}
	var f unit.File
	f.Set("Service", "ExecStart", "")
	f.Set("Service", "ExecStart", strings.Join(words, " "))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		q, err := unit.QuoteEnv(k, v)
		if err != nil {
			return nil, err
		}
		f.Set("Service", "Environment", q)
	}
	return f.Bytes()
}

// A drop-in is read by any unit of its name that systemd creates while it
// is on disk, so each belongs to exactly one run:
//   - A run with a fixed name (Cmd.Name) claims the name under a lock (a
//     flock(2) of lockFile in the transient unit directory, taken by every
//     run with a fixed name) held until systemd has created its unit. A
//     drop-in found there while no unit of the name is loaded is stale (a
//     client killed after writing it, before creating its unit) and is
//     removed, and so is a drop-in's temporary file (a client killed
//     while writing it); a unit that is loaded owns the name, and the run fails with
//     ErrUnitExists without touching its drop-in. So a unit of the name
//     that unitrun creates never reads another run's drop-in.
//   - systemd removes the drop-in, in its transient unit directory, when
//     it frees the unit: once systemd makes no further run and the unit
//     is collected, never between two runs of Restart=. The run's release
//     removes it too, under the lock, if it is still the very file the
//     run wrote (not a later run's).
// A generated name is random and used once, so its run takes no lock.

// lockFile is the file, in the manager's transient unit directory, that runs
// lock to claim a fixed name. systemd skips hidden files there.
const lockFile = ".unitrun-names.lock"

// dropInFile is the name of the drop-in in the unit's drop-in directory.
const dropInFile = "50-unitrun-exec.conf"

// claim prepares the run's name and writes the run's drop-in if args or
// env need one (needsDropIn). For a fixed name it takes the lock, which
// the run holds until its unit is created (unclaim), and removes a stale
// drop-in of the name; a name whose unit is loaded is ErrUnitExists. A
// manager without a transient unit directory has no drop-ins: there the
// command line goes over D-Bus, if D-Bus can carry it.
func (r *run) claim(ctx context.Context, fixed bool, path string, args, env []string) error {
	need := needsDropIn(args, env)
	if !fixed && !need {
		return nil // no drop-in to write, and none of the name's to find
	}
	dir, err := r.mgr.TransientUnitDir(ctx)
	if err != nil {
		if need && !dbusCarries(args, env) {
			return err
		}
		return nil
	}
	if !fixed {
		return r.writeDropIn(ctx, filepath.Join(dir, r.unit+".d"), path, args, env)
	}
	d := filepath.Join(dir, r.unit+".d")
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		// A caller that may not write the directory (a user reaching the
		// system manager over its bus) writes no drop-in and can remove
		// none: it goes on only if there is none to remove.
		if _, serr := os.Lstat(filepath.Join(d, dropInFile)); !need && errors.Is(serr, os.ErrNotExist) && flock.IsPermission(err) {
			return nil
		}
		return fmt.Errorf("job: lock the name %s: %w", r.unit, err)
	}
	r.unlock = unlock
	// The temporary files of drop-ins that killed clients were writing
	// (atomicfile's) are stale too: no other run writes one while this
	// one holds the lock.
	tmps, _ := filepath.Glob(filepath.Join(d, "."+dropInFile+".tmp-*"))
	for _, f := range tmps {
		os.Remove(f)
	}
	_, err = os.Lstat(filepath.Join(d, dropInFile))
	stale := err == nil
	if stale || need {
		p, err := r.loadState(ctx)
		if err != nil {
			r.unclaim()
			return fmt.Errorf("start %s: %w", r.unit, err)
		}
		if p != "not-found" {
			r.unclaim()
			return fmt.Errorf("%s: %w", r.unit, ErrUnitExists)
		}
	}
	if stale {
		os.Remove(filepath.Join(d, dropInFile))
	}
	if (stale || len(tmps) > 0) && !need {
		os.Remove(d) // only if empty: other drop-ins are not unitrun's
	}
	if need {
		if err := r.writeDropIn(ctx, d, path, args, env); err != nil {
			r.unclaim()
			return err
		}
	}
	return nil
}

// loadState reads the unit's LoadState, reading again after a call lost
// with the connection (the manager re-executing), until cleanupTimeout.
func (r *run) loadState(ctx context.Context) (string, error) {
	ctx, done := context.WithTimeout(ctx, cleanupTimeout)
	defer done()
	for {
		p, err := r.mgr.Properties(ctx, r.unit, manager.UnitIface)
		var reply dbus.Error
		if err == nil || errors.As(err, &reply) || ctx.Err() != nil {
			s, _ := p["LoadState"].Value().(string)
			return s, err
		}
		time.Sleep(releaseRetry)
	}
}

// unclaim releases the name's lock, if the run holds it.
func (r *run) unclaim() {
	if r.unlock != nil {
		r.unlock()
		r.unlock = nil
	}
}

// lockDir takes the lock of the transient unit directory dir, waiting for
// it until ctx ends, and returns the function that releases it. The lock
// file is readable by all, so that a caller that may not write dir takes
// the lock too, if the file is there. dir is made if systemd has not made
// it yet (it does at its first transient unit).
func lockDir(ctx context.Context, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return flock.Lock(ctx, filepath.Join(dir, lockFile))
}

// writeDropIn writes the run's drop-in into the drop-in directory d, in
// the transient unit directory, and makes systemd see it there.
//
// systemd reads a unit's drop-ins through its cache of the files in its
// unit path, which it rebuilds when it loads a unit if the mtime of a
// directory of the path changed, leaving out the transient unit directory
// (which it deems its own). So the drop-in is written first, then the
// runtime unit directory's mtime is set to now (the directory is made if
// it is not there): the unit's creation rebuilds the cache, with the
// drop-in in it.
func (r *run) writeDropIn(ctx context.Context, d, path string, args, env []string) error {
	file := filepath.Join(d, dropInFile)
	text, err := dropInText(path, args, env)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("job: drop-in for %s: %w", r.unit, err)
	}
	if err := atomicfile.Write(file, text, 0o644); err != nil {
		os.Remove(d)
		return fmt.Errorf("job: drop-in for %s: %w", r.unit, err)
	}
	if err := r.ownDropIn(file); err != nil {
		return err
	}
	units, err := r.mgr.RuntimeUnitDir(ctx)
	if err == nil {
		now := time.Now()
		if err = os.Chtimes(units, now, now); errors.Is(err, os.ErrNotExist) {
			err = os.MkdirAll(units, 0o755) // its making changes the path's mtimes too
		}
	}
	if err != nil {
		r.removeDropIn()
		return fmt.Errorf("job: drop-in for %s: %w", r.unit, err)
	}
	return nil
}

// ownDropIn records file as the run's drop-in: the very file, which its
// release removes if it is still there.
func (r *run) ownDropIn(file string) error {
	fi, err := os.Lstat(file)
	if err != nil {
		return fmt.Errorf("job: drop-in for %s: %w", r.unit, err)
	}
	r.dropIn, r.dropInInfo = file, fi
	return nil
}

// findDropIn sets the drop-in of a run that another process started
// (Attach), if the run has one, so that the release removes it. It is
// called while the unit is loaded, when no other run can write one.
func (r *run) findDropIn(ctx context.Context) {
	dir, err := r.mgr.TransientUnitDir(ctx)
	if err != nil {
		return
	}
	r.ownDropIn(filepath.Join(dir, r.unit+".d", dropInFile))
}

// removeDropIn removes the run's drop-in, under the lock, if it is still
// the file the run wrote, and its directory if that is then empty.
func (r *run) removeDropIn() {
	r.unclaim()
	if r.dropIn == "" {
		return
	}
	d := filepath.Dir(r.dropIn)
	ctx, done := context.WithTimeout(context.Background(), cleanupTimeout)
	defer done()
	if unlock, err := lockDir(ctx, filepath.Dir(d)); err == nil {
		if fi, err := os.Lstat(r.dropIn); err == nil && os.SameFile(fi, r.dropInInfo) {
			os.Remove(r.dropIn)
		}
		os.Remove(d) // only if empty
		unlock()
	}
	r.dropIn, r.dropInInfo = "", nil
}
