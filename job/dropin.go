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
// manager's runtime unit directory, which systemd reads when it creates the
// unit. The drop-in is removed when the unit stops and when the run is
// released (see claim).
//
// A command line with a word that holds '$' or ';' goes the same way:
// systemd 252 writes such words into the transient unit's file escaped
// ("\$", "\;") and, should a daemon-reload read the file back before the
// command is executed, runs them with the escapes in them
// (TestArgvExactAcrossReload). Over D-Bus they are exact otherwise, so
// they go that way when the manager has no runtime unit directory.

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

// dropInText renders the drop-in, at path file, that sets the command
// line and environment. "@" lets argv[0] differ from the path, as the
// D-Bus ExecStart does. Its ExecStopPost= removes it, and its directory if
// that is left empty, when the unit stops (while the unit is still loaded,
// so no other unit of the name can read it), even if no client is left to
// release the run. It writes nothing to the unit's output, and '-' ignores
// its failure (a unit whose User= may not remove the file leaves it for
// its release, or for the next run of its name).
func dropInText(file, path string, args, env []string) ([]byte, error) {
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
	if sh := lookTool("sh"); sh != "" {
		cleanup := []string{sh, "-c", removeScript, "sh", file, filepath.Dir(file)}
		for i, w := range cleanup {
			cleanup[i] = unit.QuoteArg(w)
		}
		f.Set("Service", "ExecStopPost", "-"+strings.Join(cleanup, " "))
	}
	return f.Bytes()
}

// removeScript removes the drop-in $1 and its directory $2 if empty,
// silently: its output would be the unit's.
const removeScript = `rm -f -- "$1" 2>/dev/null; rmdir -- "$2" 2>/dev/null; exit 0`

// lookTool returns the path of a tool in /usr/bin or /bin, or "" if
// neither has it.
func lookTool(name string) string {
	for _, dir := range []string{"/usr/bin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// A drop-in is read by any unit of its name that systemd creates while it
// is on disk, so each belongs to exactly one run:
//   - A run with a fixed name (Cmd.Name) claims the name under a lock (a
//     flock(2) of lockFile in the runtime unit directory, taken by every
//     run with a fixed name) held until systemd has created its unit. A
//     drop-in found there while no unit of the name is loaded is stale (a
//     client killed after writing it, before creating its unit) and is
//     removed; a unit that is loaded owns the name, and the run fails with
//     ErrUnitExists without touching its drop-in. So a unit of the name
//     that unitrun creates never reads another run's drop-in.
//   - The unit removes its drop-in when it stops (see dropInText), and the
//     run's release removes it too, under the lock, if it is still the
//     very file the run wrote (not a later run's).
// A generated name is random and used once, so its run takes no lock.

// lockFile is the file, in the manager's runtime unit directory, that runs
// lock to claim a fixed name. systemd skips hidden files there.
const lockFile = ".unitrun-names.lock"

// dropInFile is the name of the drop-in in the unit's drop-in directory.
const dropInFile = "50-unitrun-exec.conf"

// claim prepares the run's name and writes the run's drop-in if args or
// env need one (needsDropIn). For a fixed name it takes the lock, which
// the run holds until its unit is created (unclaim), and removes a stale
// drop-in of the name; a name whose unit is loaded is ErrUnitExists. A
// manager without a runtime unit directory has no drop-ins: there the
// command line goes over D-Bus, if D-Bus can carry it.
func (r *run) claim(ctx context.Context, fixed bool, path string, args, env []string) error {
	need := needsDropIn(args, env)
	if !fixed && !need {
		return nil // no drop-in to write, and none of the name's to find
	}
	dir, err := r.mgr.RuntimeUnitDir(ctx)
	if err != nil {
		if need && !dbusCarries(args, env) {
			return err
		}
		return nil
	}
	if !fixed {
		return r.writeDropIn(filepath.Join(dir, r.unit+".d"), path, args, env)
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
		if !need {
			os.Remove(d) // only if empty: other drop-ins are not unitrun's
		}
	}
	if need {
		if err := r.writeDropIn(d, path, args, env); err != nil {
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

// lockDir takes the lock of the runtime unit directory dir, waiting for
// it until ctx ends, and returns the function that releases it. The lock
// file is readable by all, so that a caller that may not write dir takes
// the lock too, if the file is there.
func lockDir(ctx context.Context, dir string) (func(), error) {
	return flock.Lock(ctx, filepath.Join(dir, lockFile))
}

// writeDropIn writes the run's drop-in into the drop-in directory d.
func (r *run) writeDropIn(d, path string, args, env []string) error {
	file := filepath.Join(d, dropInFile)
	text, err := dropInText(file, path, args, env)
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
	return r.ownDropIn(file)
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
	dir, err := r.mgr.RuntimeUnitDir(ctx)
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
