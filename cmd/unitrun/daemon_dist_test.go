package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestDistUnitsVerify runs "systemd-analyze verify" on the shipped units of
// dist/systemd (the template unitrun-pod@.service as an instance), with
// /usr/bin/unitrun pointing at the built binary in every command: it
// must exit 0 and print nothing.
func TestDistUnitsVerify(t *testing.T) {
	src, err := filepath.Glob("../../dist/systemd/*")
	if err != nil || len(src) < 4 {
		t.Fatalf("dist units: %q, %v", src, err)
	}
	dir := t.TempDir()
	var paths []string
	for _, p := range src {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.ReplaceAll(data, []byte("=/usr/bin/unitrun "), []byte("="+systemdtest.Binary(t)+" "))
		dst := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, dst)
	}
	cmd := exec.Command("systemd-analyze", append([]string{"verify", "--man=no", "--recursive-errors=no"}, paths...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=info", "SYSTEMD_LOG_TARGET=console", "SYSTEMD_LOG_COLOR=0")
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", strings.Join(paths, " "), err, out)
	}
}
