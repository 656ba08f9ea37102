package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/unit"
)

// D-Bus strings must be valid UTF-8, so a command line or environment value
// that is not cannot travel in StartTransientUnit's properties. For those,
// unitrun writes the ExecStart= and Environment= settings, escaped by the
// rules of systemd.syntax(7), into a drop-in of the transient unit in the
// manager's runtime unit directory, which systemd reads when it creates the
// unit. The drop-in is removed when the run is released.
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

// dropInText renders the drop-in that sets the command line and environment.
// "@" lets argv[0] differ from the path, as the D-Bus ExecStart does.
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

// writeDropIn writes the drop-in for unitName and returns its directory.
func writeDropIn(ctx context.Context, r *run, path string, args, env []string) error {
	dir, err := r.mgr.RuntimeUnitDir(ctx)
	if err != nil {
		return err
	}
	text, err := dropInText(path, args, env)
	if err != nil {
		return err
	}
	d := filepath.Join(dir, r.unit+".d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("job: drop-in for %s: %w", r.unit, err)
	}
	r.dropIn = d
	if err := atomicfile.Write(filepath.Join(d, dropInFile), text, 0o644); err != nil {
		r.removeDropIn()
		return fmt.Errorf("job: drop-in for %s: %w", r.unit, err)
	}
	return nil
}

// dropInFile is the name of the drop-in in the unit's drop-in directory.
const dropInFile = "50-unitrun-exec.conf"

// findDropIn sets the drop-in directory of a run that another process
// started (Attach), if the run has a drop-in, so that the release removes
// it.
func (r *run) findDropIn(ctx context.Context) {
	dir, err := r.mgr.RuntimeUnitDir(ctx)
	if err != nil {
		return
	}
	d := filepath.Join(dir, r.unit+".d")
	if _, err := os.Lstat(filepath.Join(d, dropInFile)); err == nil {
		r.dropIn = d
	}
}

func (r *run) removeDropIn() {
	if r.dropIn != "" {
		os.RemoveAll(r.dropIn)
		r.dropIn = ""
	}
}
