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

// needsDropIn reports whether argv or env holds bytes D-Bus cannot carry.
func needsDropIn(args, env []string) bool {
	for _, s := range args {
		if !utf8.ValidString(s) {
			return true
		}
	}
	for _, s := range env {
		if !utf8.ValidString(s) {
			return true
		}
	}
	return false
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
	if err := atomicfile.Write(filepath.Join(d, "50-unitrun-exec.conf"), text, 0o644); err != nil {
		r.removeDropIn()
		return fmt.Errorf("job: drop-in for %s: %w", r.unit, err)
	}
	return nil
}

func (r *run) removeDropIn() {
	if r.dropIn != "" {
		os.RemoveAll(r.dropIn)
		r.dropIn = ""
	}
}
