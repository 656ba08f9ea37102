package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/pullexec"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
)

// startDaemon runs "unitrun daemon" by flags with one op, "sh", that runs
// its args as a shell script, and returns its HTTP socket.
func startDaemon(t *testing.T) string {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "reboot-needed")
	return systemdtest.StartDaemon(t, `
[[op]]
name = "sh"
exec = ["/bin/sh", "-c"]
args = { min = 1, max = 1 }

[[op]]
name = "needs-reboot"
exec = ["/usr/bin/touch", "`+marker+`"]
reboot_marker = "`+marker+`"
`).API
}

func TestOpCall(t *testing.T) {
	sock := startDaemon(t)
	t.Setenv("UNITRUN_SOCKET", sock)
	out, errs, code := unitrun(t, "op", "call", "sh", "echo one; sleep 0.2; echo two; exit 3")
	if out != "one\ntwo\n" || code != 3 || !strings.Contains(errs, "failed: exit status 3") {
		t.Errorf("op call: stdout %q, stderr %q, exit %d: want the output streamed and exit 3", out, errs, code)
	}
	out, _, code = unitrun(t, "op", "call", "--json", "sh", "kill -TERM $$")
	var rec api.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil || code != 128+15 || rec.Signal != "TERM" {
		t.Errorf("op call --json: %q (%v), exit %d: want signal TERM and exit 143", out, err, code)
	}
	id, _, code := unitrun(t, "op", "call", "--no-wait", "sh", "echo started; sleep 30")
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("op call --no-wait: %q, exit %d", id, code)
	}
	for out, _, _ := unitrun(t, "op", "logs", id); out != "started\n"; out, _, _ = unitrun(t, "op", "logs", id) {
		time.Sleep(20 * time.Millisecond)
	}
	if out, _, code := unitrun(t, "op", "status", "--json", id); code != 0 || !strings.Contains(out, `"state": "running"`) {
		t.Errorf("op status: %q, exit %d", out, code)
	}
	if out, _, code := unitrun(t, "op", "cancel", id); code != 0 || !strings.Contains(out, "state\tcanceled\n") {
		t.Errorf("op cancel: %q, exit %d", out, code)
	}
	if _, errs, code := unitrun(t, "op", "wait", id); code != 128+15 || !strings.Contains(errs, "canceled by a caller: signal: SIGTERM") {
		t.Errorf("op wait on a canceled job: %q, exit %d", errs, code)
	}
	if out, _, code := unitrun(t, "op", "logs", id); code != 0 || out != "started\n" {
		t.Errorf("op logs: %q, exit %d", out, code)
	}
	if out, _, code := unitrun(t, "op", "jobs"); code != 0 || strings.Count(out, "\n") != 3 || strings.Count(out, "\t") != 12 {
		t.Errorf("op jobs: %q, exit %d: want 3 jobs of 5 tab-separated columns and no header", out, code)
	}
	if _, errs, code := unitrun(t, "op", "call", "nosuch"); code != exitUsage || !strings.Contains(errs, "unknown_op") {
		t.Errorf("op call nosuch: %q, exit %d", errs, code)
	}
	// A job ID the daemon does not know exits 1, as a pod or an image
	// that does not exist does.
	for _, sub := range []string{"status", "wait", "cancel", "logs"} {
		out, errs, code := unitrun(t, "op", sub, "20261202T142501Z-0123abcd")
		if code != exitNoJob || out != "" || !strings.Contains(errs, "no such job") {
			t.Errorf("op %s of an unknown job: stdout %q, stderr %q, exit %d: want exit 1 and \"no such job\"", sub, out, errs, code)
		}
	}
	// A repeated call with the same key gets the first call's job.
	first, _, code := unitrun(t, "op", "call", "--key", "k1", "--no-wait", "sh", "echo keyed")
	again, _, code2 := unitrun(t, "op", "call", "--key", "k1", "sh", "echo keyed")
	if code != 0 || code2 != 0 || strings.TrimSpace(first) == "" || again != "keyed\n" {
		t.Errorf("op call --key twice: %q (exit %d), then %q (exit %d): want the job's id, then its output once", first, code, again, code2)
	}
	if out, _, _ := unitrun(t, "op", "jobs"); strings.Count(out, "\n") != 4 {
		t.Errorf("op jobs after two keyed calls: %q: want one job more", out)
	}
	if _, errs, code := unitrun(t, "op", "call", "--key", "k1", "sh", "echo other"); code != exitFailed || !strings.Contains(errs, "key_conflict") {
		t.Errorf("op call --key with other args: %q, exit %d", errs, code)
	}
}

// TestOpCallBadKey: a --key not of the form the daemon takes exits 2,
// naming the flag and the rule, and calls nothing, with and without
// --no-wait (it went to the daemon and exited 125 with its bad_request).
func TestOpCallBadKey(t *testing.T) {
	t.Setenv("UNITRUN_SOCKET", startDaemon(t))
	for _, args := range [][]string{{"op", "call", "--key", "bad key", "sh", "true"}, {"op", "call", "--no-wait", "--key", "-x", "sh", "true"}} {
		key := args[len(args)-3]
		out, errs, code := unitrun(t, args...)
		if want := fmt.Sprintf("unitrun: --key %q: must match %s\n", key, api.KeyPattern); code != exitUsage || out != "" || errs != want {
			t.Errorf("unitrun %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errs, want)
		}
	}
	if out, errs, code := unitrun(t, "op", "jobs"); code != 0 || out != "" {
		t.Errorf("op jobs after calls with bad keys: %q, %q, exit %d; want no job", out, errs, code)
	}
}

func TestInjectCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	out, errs, code := unitrun(t, "inject", "--dir", dir)
	path := strings.TrimSpace(out)
	if code != 0 || filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "unitrun-") {
		t.Fatalf("inject: %q %q, exit %d", out, errs, code)
	}
	if again, _, _ := unitrun(t, "inject", "--dir", dir); strings.TrimSpace(again) != path {
		t.Errorf("second inject: %q, want %q", again, path)
	}
	out, _, _ = unitrun(t, "inject", "--json", "--dir", dir)
	var installed struct{ Path string }
	if err := json.Unmarshal([]byte(out), &installed); err != nil || installed.Path != path {
		t.Errorf("inject --json: %q (%v), want path %q", out, err, path)
	}
	osRelease := filepath.Join(t.TempDir(), "os-release")
	os.WriteFile(osRelease, []byte("ID=rhel\nVERSION_ID=9.4\n"), 0o644)
	bin := systemdtest.Binary(t)
	out, _, code = unitrun(t, "inject", "--dir", dir, "--os-release", osRelease, "--variant", "/nonexistent:ID=fedora", "--variant", bin+":ID=rhel,VERSION_ID=9*")
	if code != 0 || strings.TrimSpace(out) != path {
		t.Errorf("inject --variant: %q, exit %d, want %q", out, code, path)
	}
	if _, errs, code := unitrun(t, "inject", "--dir", dir, "--os-release", osRelease, "--variant", bin+":ID=fedora"); code != exitUsage || !strings.Contains(errs, "fedora") {
		t.Errorf("inject with no fitting variant: %q, exit %d", errs, code)
	}
	if out, _, code := unitrun(t, "inject", "--gc", "--dir", dir); code != 0 || out != "removed "+path+"\nremoved "+pod.HookPath(path)+"\nremoved "+pullexec.Path(path)+"\n" {
		t.Errorf("inject --gc: %q, exit %d", out, code)
	}
	var gc struct{ Removed []string }
	if out, _, code := unitrun(t, "inject", "--gc", "--json", "--dir", dir); json.Unmarshal([]byte(out), &gc) != nil || code != 0 || gc.Removed == nil || len(gc.Removed) != 0 {
		t.Errorf("inject --gc --json with nothing to remove: %q, exit %d; want {\"removed\": []}", out, code)
	}
}

// TestInjectRefusesPathsTypedWrong: a --dir that is relative, missing or
// not a directory, a PATH that is missing or not a regular file, and --gc
// given a PATH, exit 2 naming them, before anything is written or removed.
// "inject --dir REL --gc" removed the copy that a loaded unit ran (its
// ExecStart= path is absolute, so the relative one never matched), and
// "inject --gc PATH" ignored PATH; the others exited 125.
func TestInjectRefusesPathsTypedWrong(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "bin")
	out, errs, code := unitrun(t, "inject", "--dir", dir, "/bin/sleep")
	copied := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("inject: %q %q, exit %d", out, errs, code)
	}
	// A unit that runs the copy, loaded until the test ends.
	if out, errs, code := unitrun(t, "run", "--no-wait", "-q", "--", copied, "600"); code != 0 {
		t.Fatalf("run --no-wait %s: %q %q, exit %d", copied, out, errs, code)
	} else {
		unitName := strings.TrimSpace(out)
		t.Cleanup(func() { systemdtest.Conn(t).StopUnit(context.Background(), unitName, "replace") })
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inject", "--dir", "bin", "--gc"}, `unitrun: --dir bin: must be an absolute path`},
		{[]string{"inject", "--dir", "bin", "/bin/sleep"}, `unitrun: --dir bin: must be an absolute path`},
		{[]string{"inject", "--dir", file, "/bin/sleep"}, "unitrun: --dir " + file + ": not a directory"},
		{[]string{"inject", "--dir", file, "--gc"}, "unitrun: --dir " + file + ": not a directory"},
		{[]string{"inject", "--dir", filepath.Join(base, "none", "bin"), "/bin/sleep"}, "unitrun: --dir " + filepath.Join(base, "none", "bin") + ": no such file or directory"},
		{[]string{"inject", "--dir", dir, filepath.Join(base, "none")}, "unitrun: inject: source " + filepath.Join(base, "none") + ": no such file or directory"},
		{[]string{"inject", "--dir", dir, base}, "unitrun: inject: source " + base + ": not a regular file (it is a directory)"},
		{[]string{"inject", "--dir", dir, "--gc", "/bin/sleep"}, "unitrun: --gc removes the copies in --dir that no unit runs; it takes no PATH or --variant"},
	} {
		cmd := exec.Command(systemdtest.Binary(t), tc.args...)
		cmd.Dir = base
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || errb.String() != tc.want+"\n" || out.Len() != 0 {
			t.Errorf("unitrun %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out.String(), errb.String(), tc.want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 || filepath.Join(dir, entries[0].Name()) != copied {
		t.Errorf("--dir %s after the refusals: %v, %v; want only %s, which a unit runs", dir, entries, err, copied)
	}
	if _, err := os.Stat(filepath.Join(base, "none")); !os.IsNotExist(err) {
		t.Errorf("a refused inject created a directory (%v)", err)
	}
}

// TestRunSelf runs the injected copy of unitrun itself as a unit, injected
// into a directory of the test's, not the host's /run/bin.
func TestRunSelf(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := unitrun(t, "run", "--self", "--inject-dir", dir, "-q", "--", "op", "list", "--help")
	if code != 0 || !strings.Contains(out, "List the daemon's ops") {
		t.Errorf("run --self: %q %q, exit %d", out, errs, code)
	}
	if copies, _ := filepath.Glob(filepath.Join(dir, "unitrun-*")); len(copies) != 3 || copies[1] != pod.HookPath(copies[0]) || copies[2] != pullexec.Path(copies[0]) {
		t.Errorf("run --self --inject-dir %s: copies %q, want one, its hook and its unitrun-pull", dir, copies)
	}
}

// TestOpCallRebootIfNeeded checks that --reboot-if-needed starts
// reboot.target on the manager when the op reports reboot_required, here a
// harmless reboot.target of the test manager.
func TestOpCallRebootIfNeeded(t *testing.T) {
	conn := systemdtest.Conn(t)
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), "reboot.target"), "[Unit]\nDescription=test reboot\n")
	if err := conn.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.StopUnit(context.Background(), "reboot.target", "replace") })
	sock := startDaemon(t)
	_, errs, code := unitrun(t, "op", "call", "--socket", sock, "needs-reboot")
	if code != 0 || !strings.Contains(errs, "reboot required") {
		t.Fatalf("op call: %q, exit %d", errs, code)
	}
	if props, err := conn.Properties(context.Background(), "reboot.target", manager.UnitIface); err != nil || props["ActiveState"].Value() != "inactive" {
		t.Fatalf("reboot.target after a call without --reboot-if-needed: %v, %v", props["ActiveState"], err)
	}
	if _, _, code := unitrun(t, "op", "call", "--socket", sock, "--reboot-if-needed", "needs-reboot"); code != 0 {
		t.Fatalf("op call --reboot-if-needed: exit %d", code)
	}
	for {
		props, err := conn.Properties(context.Background(), "reboot.target", manager.UnitIface)
		if err != nil {
			t.Fatal(err)
		}
		if props["ActiveState"].Value() == "active" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
