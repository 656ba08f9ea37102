package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// sockDir is where the shipped socket units listen.
const sockDir = "/run/unitrun"

// install puts the binary and the daemon's units in place, enabled and
// listening; uninstall leaves the manager as it was.
func TestInstallUninstall(t *testing.T) {
	ctx := context.Background()
	conn := systemdtest.Conn(t)
	unitDir := systemdtest.RuntimeUnitDir(t)
	binDir, dbusDir := t.TempDir(), t.TempDir()
	args := []string{"--bin-dir", binDir, "--unit-dir", unitDir, "--runtime", "--dbus-dir", dbusDir}
	dbusFiles := []string{filepath.Join(dbusDir, "system.d", "org.unitrun.Ops1.conf"), filepath.Join(dbusDir, "system-services", "org.unitrun.Ops1.service")}
	before, err := conn.ListUnitNames(ctx, "unitrun")
	if err != nil {
		t.Fatal(err)
	}
	// The sockets listen in the host's /run/unitrun, which systemd
	// creates: remove it again if it was not there.
	if _, err := os.Lstat(sockDir); os.IsNotExist(err) {
		t.Cleanup(func() { os.Remove(sockDir) })
	}

	out, errs, code := unitrun(t, append([]string{"install", "--now", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, errs)
	}
	bin := filepath.Join(binDir, "unitrun")
	var report struct {
		Binary  string   `json:"binary"`
		Units   []string `json:"units"`
		UnitDir string   `json:"unit_dir"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || report.Binary != bin || report.UnitDir != unitDir || len(report.Units) != 3 {
		t.Errorf("install --json: %q (%v)", out, err)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary: %v %v", fi, err)
	}
	svc, err := os.ReadFile(filepath.Join(unitDir, "unitrun.service"))
	if err != nil || !strings.Contains(string(svc), "ExecStart="+bin+" ") {
		t.Errorf("unitrun.service does not run the installed binary:\n%s", svc)
	}
	for _, p := range dbusFiles {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("D-Bus file not installed: %v", err)
		}
	}
	for _, s := range []string{"unitrun.socket", "unitrun-argv.socket"} {
		state, err := conn.UnitFileState(ctx, s)
		if err != nil || state != "enabled-runtime" {
			t.Errorf("%s: unit file state %q, %v; want enabled-runtime", s, state, err)
		}
		p, err := conn.Properties(ctx, s, "org.freedesktop.systemd1.Unit")
		if err != nil || p["ActiveState"].Value() != "active" {
			t.Errorf("%s: %v, %v; want active (listening)", s, p["ActiveState"], err)
		}
	}

	if out, errs, code := unitrun(t, append([]string{"uninstall"}, args...)...); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(bin); err == nil {
		t.Error("binary still installed")
	}
	for _, p := range dbusFiles {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s still installed", p)
		}
	}
	for _, name := range []string{"unitrun.socket", "unitrun-argv.socket", "unitrun.service"} {
		if _, err := os.Stat(filepath.Join(unitDir, name)); err == nil {
			t.Errorf("%s still installed", name)
		}
		if state, _ := conn.UnitFileState(ctx, name); state != "" && state != "not-found" {
			t.Errorf("%s: unit file state %q after uninstall", name, state)
		}
	}
	for _, sock := range []string{filepath.Join(sockDir, "api.sock"), filepath.Join(sockDir, "argv.sock")} {
		if _, err := os.Lstat(sock); err == nil {
			t.Errorf("socket %s left after uninstall", sock)
		}
	}
	after, _ := conn.ListUnitNames(ctx, "unitrun")
	if len(after) != len(before) {
		t.Errorf("units loaded before install %v, after uninstall %v", before, after)
	}
}
