package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// sockDir is where the shipped socket units listen.
const sockDir = "/run/unitrun"

// install puts the binary and the daemon's units in place, enabled and
// listening, creating PREFIX/bin (it refused a --prefix without a bin
// directory, blaming --bin-dir); uninstall leaves the manager as it was,
// and a second uninstall finds nothing to do.
func TestInstallUninstall(t *testing.T) {
	ctx := context.Background()
	conn := systemdtest.Conn(t)
	unitDir := systemdtest.RuntimeUnitDir(t)
	prefix, dbusDir := t.TempDir(), t.TempDir()
	binDir := filepath.Join(prefix, "bin")
	args := []string{"--prefix", prefix, "--unit-dir", unitDir, "--runtime", "--dbus-dir", dbusDir}
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
	// The pods' exit hook and the puller of images, beside the binary
	// that runs the install, go beside the installed one.
	for _, beside := range []string{"-hook", "-pull"} {
		want, err := os.ReadFile(systemdtest.Binary(t) + beside)
		if err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(bin + beside); err != nil || !bytes.Equal(data, want) {
			t.Errorf("installed %s: %d bytes, %v; want the %d of the one beside unitrun", bin+beside, len(data), err, len(want))
		}
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
	for _, beside := range []string{"-hook", "-pull"} {
		if _, err := os.Stat(bin + beside); err == nil {
			t.Errorf("%s still installed", bin+beside)
		}
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
	// What is gone already is no error: a second uninstall has nothing
	// to do. (systemd refused to disable the missing unit files: exit 125,
	// "disable: Unit file unitrun.socket does not exist.")
	if out, errs, code := unitrun(t, append([]string{"uninstall"}, args...)...); code != 0 || out != "" || errs != "" {
		t.Errorf("a second uninstall: exit %d, %q%q; want exit 0 and nothing said", code, out, errs)
	}
	// A --unit-dir typed wrong exits 2, as install's does.
	missing := filepath.Join(dbusDir, "missing")
	if out, errs, code := unitrun(t, "uninstall", "--prefix", prefix, "--unit-dir", missing, "--dbus-dir", ""); code != exitUsage || errs != "unitrun: --unit-dir "+missing+": no such file or directory\n" {
		t.Errorf("uninstall --unit-dir %s: exit %d, %q%q; want exit 2 naming --unit-dir", missing, code, out, errs)
	}
}

// TestInstallReadOnlyUsr installs on a host whose /usr is read-only, as
// an image-based host's (Fedora CoreOS, RHEL for Edge): in a private mount
// namespace where /usr is a read-only bind mount, and /usr/local and
// /etc/dbus-1 are directories of the test (on Fedora CoreOS /usr/local is
// the writable /var/usrlocal), install run from a release's layout puts
// the binary in /usr/local/bin, the units run it from there, the D-Bus
// policy goes to /etc/dbus-1/system.d and the man pages to
// /usr/local/share/man; uninstall removes them all. (install wrote to
// /usr/bin and failed with a read-only file system.)
func TestInstallReadOnlyUsr(t *testing.T) {
	ctx := context.Background()
	conn := systemdtest.Conn(t)
	unitDir := systemdtest.RuntimeUnitDir(t)
	usrLocal, etcDBus, release := t.TempDir(), t.TempDir(), t.TempDir()
	self, err := os.ReadFile(systemdtest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	page := []byte("a man page")
	for p, data := range map[string][]byte{
		filepath.Join(release, "bin", "unitrun"):                  self,
		filepath.Join(release, "man", "man1", "unitrun-run.1.gz"): page,
		filepath.Join(usrLocal, "bin", ".keep"):                   nil,
		filepath.Join(etcDBus, "system.d", ".keep"):               nil,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	readOnlyUsr := func(args ...string) (string, string, int) {
		t.Helper()
		const script = `mount --bind /usr /usr && mount -o remount,bind,ro /usr && mount --bind "$1" /usr/local && mount --bind "$2" /etc/dbus-1 && shift 2 && exec "$@"`
		cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", usrLocal, etcDBus,
			filepath.Join(release, "bin", "unitrun")}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	if out, errs, code := readOnlyUsr("sh", "-c", "touch /usr/.unitrun-probe"); code == 0 {
		t.Fatalf("/usr is not read-only in the namespace: %s%s", out, errs)
	}

	out, errs, code := readOnlyUsr("install", "--json", "--unit-dir", unitDir, "--runtime")
	if code != 0 {
		t.Fatalf("install with /usr read-only: exit %d\n%s%s", code, out, errs)
	}
	var report struct {
		Binary  string `json:"binary"`
		DBusDir string `json:"dbus_policy_dir"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || report.Binary != "/usr/local/bin/unitrun" || report.DBusDir != "/etc/dbus-1/system.d" {
		t.Errorf("install --json: %q (%v); want binary /usr/local/bin/unitrun, D-Bus policy in /etc/dbus-1/system.d", out, err)
	}
	installed := []string{
		filepath.Join(usrLocal, "bin", "unitrun"),
		filepath.Join(etcDBus, "system.d", "org.unitrun.Ops1.conf"),
		filepath.Join(usrLocal, "share", "dbus-1", "system-services", "org.unitrun.Ops1.service"),
		filepath.Join(usrLocal, "share", "man", "man1", "unitrun-run.1.gz"),
	}
	for _, p := range installed {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	if got, err := os.ReadFile(installed[0]); err != nil || !bytes.Equal(got, self) {
		t.Errorf("/usr/local/bin/unitrun is not the binary (%v)", err)
	}
	svc, err := os.ReadFile(filepath.Join(unitDir, "unitrun.service"))
	if err != nil || !strings.Contains(string(svc), "ExecStart=/usr/local/bin/unitrun ") {
		t.Errorf("unitrun.service does not run /usr/local/bin/unitrun (%v):\n%s", err, svc)
	}
	if state, err := conn.UnitFileState(ctx, "unitrun.socket"); err != nil || state != "enabled-runtime" {
		t.Errorf("unitrun.socket: unit file state %q, %v; want enabled-runtime", state, err)
	}

	if out, errs, code := readOnlyUsr("uninstall", "--unit-dir", unitDir, "--runtime"); code != 0 {
		t.Fatalf("uninstall with /usr read-only: exit %d\n%s%s", code, out, errs)
	}
	for _, p := range append(installed, filepath.Join(unitDir, "unitrun.service")) {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s still installed", p)
		}
	}
}

// TestInstallBadDirs checks that a directory flag that is not an absolute
// path, or a --prefix that does not exist, exits 2 naming the flag
// before anything is written. (--prefix "" installed into /usr, and a
// missing prefix was blamed on --bin-dir, a flag not given.) Each case
// gives --bin-dir, --unit-dir and --dbus-dir "" of the test, so that
// install gone wrong writes nowhere else.
func TestInstallBadDirs(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--prefix", "usr/local", "--bin-dir", dir}, `--prefix "usr/local": must be an absolute path`},
		{[]string{"--prefix", "", "--bin-dir", dir}, `--prefix "": must be an absolute path`},
		{[]string{"--prefix", dir, "--bin-dir", ""}, `--bin-dir "": must be an absolute path`},
		{[]string{"--bin-dir", dir, "--unit-dir", "systemd"}, `--unit-dir "systemd": must be an absolute path`},
		{[]string{"--prefix", missing}, "--prefix " + missing + ": no such file or directory"},
	} {
		args := append([]string{"install", "--unit-dir", dir, "--dbus-dir", ""}, tc.args...)
		out, errs, code := unitrun(t, args...)
		if code != exitUsage || errs != "unitrun: "+tc.want+"\n" {
			t.Errorf("unitrun %q: exit %d, %q%q; want exit 2 and %q", args, code, out, errs, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Fatalf("unitrun %q wrote to %s: %v", args, dir, entries)
		}
	}
}

// TestInstallFailureLeavesNothing makes install fail at enabling the
// sockets (its units go to a directory systemd does not read) and checks
// that it exits 125 and takes back what it wrote: the binary, PREFIX/bin,
// the D-Bus files and their directories are gone, and a unit file that
// was there holds what it held. (They stayed.)
func TestInstallFailureLeavesNothing(t *testing.T) {
	systemdtest.Conn(t)
	prefix, unitDir, dbusDir := t.TempDir(), t.TempDir(), t.TempDir()
	svc := filepath.Join(unitDir, "unitrun.service")
	if err := os.WriteFile(svc, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	out, errs, code := unitrun(t, "install", "--prefix", prefix, "--unit-dir", unitDir, "--dbus-dir", dbusDir, "--runtime")
	if code != exitFailed || !strings.HasPrefix(errs, "unitrun: enable unitrun.socket, unitrun-argv.socket: ") {
		t.Fatalf("install into a unit dir systemd does not read: exit %d, %q%q; want exit 125, enable failed", code, out, errs)
	}
	for _, d := range []string{prefix, dbusDir} {
		if entries, err := os.ReadDir(d); err != nil || len(entries) > 0 {
			t.Errorf("%s after a failed install: %v, %v; want it empty", d, entries, err)
		}
	}
	if entries, _ := os.ReadDir(unitDir); len(entries) != 1 {
		t.Errorf("%s after a failed install: %v; want only unitrun.service, as before", unitDir, entries)
	}
	if data, err := os.ReadFile(svc); err != nil || string(data) != "old\n" {
		t.Errorf("unitrun.service after a failed install: %q, %v; want what it held before", data, err)
	}
	if fi, err := os.Stat(svc); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("unitrun.service after a failed install: %v, %v; want mode 0640 as before", fi, err)
	}
}

// TestInstallHelpNamesItsBinaries: install --help says that it copies
// unitrun-hook and unitrun-pull with unitrun, as it does (it said "this
// binary" alone, and a user could not tell whether images would work).
func TestInstallHelpNamesItsBinaries(t *testing.T) {
	out, errs, code := unitrun(t, "install", "--help")
	if code != 0 || !strings.Contains(out, "with unitrun-hook\n") || !strings.Contains(out, "unitrun-pull (which\npulls images) from beside it") {
		t.Errorf("install --help: exit %d, %q%q; want it to name unitrun-hook and unitrun-pull", code, out, errs)
	}
}
