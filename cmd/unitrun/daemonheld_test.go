package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// secondDaemon runs "unitrun daemon" with args and returns its stderr and
// exit status once it exits; a daemon still running after a minute (it
// serves) fails the test.
func secondDaemon(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(systemdtest.Binary(t), args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		t.Fatalf("unitrun %q still ran after a minute, want it refused at once; stderr:\n%s", args, errb.String())
	}
	return errb.String(), cmd.ProcessState.ExitCode()
}

// callOK fails the test unless the HTTP socket sock serves a call of op
// "ok" to its end, and returns the job's record.
func callOK(t *testing.T, sock string) *api.Record {
	t.Helper()
	out, errs, code := unitrun(t, "op", "call", "--json", "--socket", sock, "ok")
	var rec api.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil || code != 0 || rec.State != api.StateSucceeded {
		t.Fatalf("op call ok on %s: %q, stderr %q, exit %d", sock, out, errs, code)
	}
	return &rec
}

// One daemon at a time holds a state dir: a second one on it exits 1
// naming the dir and the first one's pid, before it binds a socket or
// touches a record, and every record the first acknowledged is there
// after it restarts (two daemons on one dir each wrote their own
// records.log over the other's).
func TestDaemonStateDirHeld(t *testing.T) {
	d := systemdtest.StartDaemon(t, systemdtest.OutcomeOps)
	first := callOK(t, d.API)
	other := filepath.Join(t.TempDir(), "b.sock")
	errs, code := secondDaemon(t, slices.Concat(d.Args(), []string{"--socket", other, "--seqpacket", other + ".argv"})...)
	state := filepath.Join(d.Dir, "state")
	if want := fmt.Sprintf("--state-dir %s is held by another unitrun daemon (pid %d)", state, d.Cmd.Process.Pid); code != 1 || !strings.Contains(errs, want) {
		t.Errorf("second daemon on the state dir: exit %d, stderr %q; want exit 1 and %q", code, errs, want)
	}
	if _, err := os.Lstat(other); err == nil {
		t.Errorf("the refused daemon bound its socket %s", other)
	}
	second := callOK(t, d.API)
	d.Cmd.Process.Signal(syscall.SIGTERM)
	d.Cmd.Wait()
	d.Start(t)
	for _, want := range []*api.Record{first, second} {
		out, errs, code := unitrun(t, "op", "status", "--json", "--socket", d.API, want.ID)
		var rec api.Record
		if err := json.Unmarshal([]byte(out), &rec); err != nil || code != 0 || rec.State != api.StateSucceeded {
			t.Errorf("after a restart, job %s: %q, stderr %q, exit %d; want its succeeded record", want.ID, out, errs, code)
		}
	}
}

// An empty --config, --state-dir, --socket or --seqpacket exits 2 naming
// the flag, before anything is created. The error of --config "" named no
// file ("names DIR, which is not a *.toml file"); the daemon took
// --state-dir "" for the directory it was started in, writing its records
// there, and an empty socket flag for none given, binding both default
// sockets.
func TestDaemonEmptyPathFlags(t *testing.T) {
	dir := t.TempDir()
	systemdtest.Binary(t) // built from the package's directory, before the test leaves it
	t.Chdir(dir)
	os.WriteFile("daemon.toml", []byte(systemdtest.OutcomeOps), 0o600)
	daemon := []string{"daemon", "--config", "daemon.toml", "--ops-dir", "ops.d", "--state-dir", filepath.Join(dir, "state"),
		"--socket", filepath.Join(dir, "api.sock"), "--seqpacket", filepath.Join(dir, "argv.sock")}
	for _, tc := range []struct{ flag, want string }{
		{"--config", "--config: must name a *.toml file, not be empty"},
		{"--state-dir", "--state-dir: must name a directory, not be empty"},
		{"--socket", "--socket: must name a socket path, not be empty"},
		{"--seqpacket", "--seqpacket: must name a socket path, not be empty"},
	} {
		errs, code := secondDaemon(t, append(daemon, tc.flag, "")...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("daemon %s \"\": exit %d, stderr %q; want exit %d and %q", tc.flag, code, errs, exitUsage, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("refused daemons left %d entries in %s, want only daemon.toml", len(entries), dir)
	}
}

// A daemon given a socket path a live daemon answers on exits 1 saying it
// is in use, creates nothing (it made its state dir first), and leaves it
// answering (a second daemon took the first one's sockets and removed them
// as it exited); a stale socket, left by a daemon killed with SIGKILL, is
// replaced.
func TestDaemonSocketInUse(t *testing.T) {
	d := systemdtest.StartDaemon(t, systemdtest.OutcomeOps)
	for _, tc := range []struct{ flag, path string }{{"--socket", d.API}, {"--seqpacket", d.Argv}} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "daemon.toml"), []byte(systemdtest.OutcomeOps), 0o600)
		args := []string{"daemon", "--config", filepath.Join(dir, "daemon.toml"), "--ops-dir", filepath.Join(dir, "ops.d"),
			"--state-dir", filepath.Join(dir, "state"), tc.flag, tc.path}
		errs, code := secondDaemon(t, args...)
		if want := fmt.Sprintf("%s %s: socket %s is in use", tc.flag, tc.path, tc.path); code != 1 || !strings.Contains(errs, want) {
			t.Errorf("second daemon on %s: exit %d, stderr %q; want exit 1 and %q", tc.path, code, errs, want)
		}
		if _, err := os.Lstat(filepath.Join(dir, "state")); !os.IsNotExist(err) {
			t.Errorf("second daemon on %s created its --state-dir (%v); want nothing created", tc.path, err)
		}
		callOK(t, d.API)
		if ok, err := seqpacketCall(d.Argv, "ok"); !ok || err != nil {
			t.Errorf("after a second daemon was given %s %s, a call on the first one's SEQPACKET socket: ok %v, %v", tc.flag, tc.path, ok, err)
		}
	}
	d.Cmd.Process.Signal(syscall.SIGKILL)
	d.Cmd.Wait()
	d.Start(t)
	callOK(t, d.API)
}

// seqpacketCall calls op on the SEQPACKET socket sock and reports whether
// its job succeeded.
func seqpacketCall(sock, op string) (bool, error) {
	c, err := net.Dial("unixpacket", sock)
	if err != nil {
		return false, err
	}
	defer c.Close()
	pkt, err := api.EncodeRequest(op, nil)
	if err != nil {
		return false, err
	}
	if _, err := c.Write(pkt); err != nil {
		return false, err
	}
	buf := make([]byte, 64<<10)
	n, err := c.Read(buf)
	if err != nil {
		return false, err
	}
	ok, _, _, err := api.ParseResponse(buf[:n])
	return ok, err
}
