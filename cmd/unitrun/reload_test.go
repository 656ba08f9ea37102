package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// TestDaemonReloadsOnSIGHUP runs a daemon on the test manager and sends it
// SIGHUP: a valid new config's ops apply to new calls while a job of a
// removed op runs on to its own end; an invalid config is logged with its
// file:line and the ops stay; the daemon serves throughout and stops
// cleanly at the end (the harness checks its exit status).
func TestDaemonReloadsOnSIGHUP(t *testing.T) {
	d := systemdtest.StartDaemon(t, `
[[op]]
name = "old"
exec = ["/bin/sh", "-c", "echo started; read line < \"$1\"; echo \"old ran to its end\"", "sh"]
args = { min = 1, max = 1 }
`)
	t.Setenv("UNITRUN_SOCKET", d.API)
	config := filepath.Join(d.Dir, "daemon.toml")
	fifo := filepath.Join(t.TempDir(), "go-on")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	id, _, code := unitrun(t, "op", "call", "--no-wait", "old", fifo)
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("op call old: %q, exit %d", id, code)
	}
	for out, _, _ := unitrun(t, "op", "logs", id); out != "started\n"; out, _, _ = unitrun(t, "op", "logs", id) {
		time.Sleep(20 * time.Millisecond)
	}

	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hup := func() {
		t.Helper()
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	write(`
[[op]]
name = "new"
exec = ["/bin/echo", "new op"]
`)
	hup()
	// The reload is done once the daemon lists the new op.
	for out, _, _ := unitrun(t, "op", "list"); !strings.HasPrefix(out, "new\t"); out, _, _ = unitrun(t, "op", "list") {
		if d.Cmd.ProcessState != nil || !socketAnswers(t) {
			t.Fatalf("the daemon is gone after SIGHUP:\n%s", d.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, errs, code := unitrun(t, "op", "call", "-q", "new"); code != 0 || out != "new op\n" {
		t.Errorf("op call new after the reload: %q %q, exit %d", out, errs, code)
	}
	if _, errs, code := unitrun(t, "op", "call", "old", fifo); code != exitUsage || !strings.Contains(errs, "unknown_op") {
		t.Errorf("op call old after the reload removed it: %q, exit %d; want unknown_op", errs, code)
	}
	if out, _, _ := unitrun(t, "op", "status", "--json", id); !strings.Contains(out, `"state": "running"`) {
		t.Errorf("the job of the removed op after the reload: %s; want it running", out)
	}

	// An invalid config: logged with file:line, and the ops stay.
	write("[[op]]\nname = \"broken\"\nexec = \"not a list\"\n")
	hup()
	for !strings.Contains(d.Log(), config+":3") {
		if d.Cmd.ProcessState != nil {
			t.Fatalf("the daemon is gone after a SIGHUP with a bad config:\n%s", d.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, _, code := unitrun(t, "op", "list"); code != 0 || !strings.HasPrefix(out, "new\t") || strings.Count(out, "\n") != 1 {
		t.Errorf("op list after a bad reload: %q, exit %d; want the op of the last good config", out, code)
	}

	// The job of the removed op ends as it would have.
	if err := os.WriteFile(fifo, []byte("go on\n"), 0); err != nil {
		t.Fatal(err)
	}
	out, _, code := unitrun(t, "op", "wait", "--json", id)
	var rec api.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil || code != 0 || rec.State != api.StateSucceeded {
		t.Errorf("op wait on the job of the removed op: %q (%v), exit %d", out, err, code)
	}
	if out, _, _ := unitrun(t, "op", "logs", id); out != "started\nold ran to its end\n" {
		t.Errorf("output of the job of the removed op: %q", out)
	}
}

// socketAnswers reports whether the daemon of UNITRUN_SOCKET answers.
func socketAnswers(t *testing.T) bool {
	_, _, code := unitrun(t, "op", "jobs")
	return code == 0
}

// TestDaemonUnitReload runs the daemon as a Type=notify service of the
// test manager with the shipped unit's ExecReload= line: "systemctl
// reload" applies a new config, and the service stays active on the same
// main process.
func TestDaemonUnitReload(t *testing.T) {
	shipped, err := os.ReadFile("../../dist/systemd/unitrun.service")
	if err != nil {
		t.Fatal(err)
	}
	var execReload string
	for _, line := range strings.Split(string(shipped), "\n") {
		if strings.HasPrefix(line, "ExecReload=") {
			execReload = line
		}
	}
	if execReload == "" {
		t.Fatal("dist/systemd/unitrun.service has no ExecReload=")
	}
	d := systemdtest.NewDaemon(t, "[[op]]\nname = \"before\"\nexec = [\"/bin/true\"]\n")
	conn := systemdtest.Conn(t)
	const name = "unitrun-test-reload.service"
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), name), `[Service]
Type=notify
ExecStart=`+systemdtest.Binary(t)+" "+strings.Join(append(d.Args(), "--socket", d.API, "--seqpacket", d.Argv), " ")+`
`+execReload+`
Environment=`+manager.EnvManager+"="+os.Getenv(manager.EnvManager)+`
`)
	ctx := context.Background()
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.StopUnit(context.Background(), name, "replace")
		conn.ResetFailedUnit(context.Background(), name)
	})
	if _, err := job.Unit(conn, name).Run(ctx); err != nil {
		t.Fatal(err)
	}
	pid := func() any {
		p, err := conn.Properties(ctx, name, manager.ServiceIface)
		if err != nil {
			t.Fatal(err)
		}
		return p["MainPID"].Value()
	}
	before := pid()
	t.Setenv("UNITRUN_SOCKET", d.API)
	if err := os.WriteFile(filepath.Join(d.Dir, "daemon.toml"), []byte("[[op]]\nname = \"after\"\nexec = [\"/bin/true\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("systemctl", "--user", "reload", name).CombinedOutput(); err != nil {
		t.Fatalf("systemctl --user reload: %v\n%s", err, out)
	}
	for out, _, _ := unitrun(t, "op", "list"); !strings.HasPrefix(out, "after\t"); out, _, _ = unitrun(t, "op", "list") {
		if p, err := conn.Properties(ctx, name, manager.UnitIface); err != nil || p["ActiveState"].Value() == "failed" || p["ActiveState"].Value() == "inactive" {
			t.Fatalf("the daemon's unit after the reload: %v (%v)", p["ActiveState"], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	systemdtest.WaitActiveState(t, conn, name, "active")
	if after := pid(); after != before {
		t.Errorf("MainPID %v before the reload, %v after: want the same daemon", before, after)
	}
}
