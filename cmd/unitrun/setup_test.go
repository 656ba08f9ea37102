package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestRunSetupFailureReasons: a working directory, user or group that does
// not exist is reported with the setting and the reason, never as a bare
// "job ... failed": the working directory before anything starts (the test
// manager sees the caller's file system), the user and group from
// systemd's exit status.
func TestRunSetupFailureReasons(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--working-directory", "/nope"}, "working directory /nope: no such file or directory"},
		{[]string{"-p", "WorkingDirectory=/nope"}, "working directory /nope: no such file or directory"},
		{[]string{"-p", "User=nope"}, "user nope: no such user"},
		{[]string{"-p", "Group=nope"}, "group nope: no such group"},
	} {
		_, errs, code := unitrun(t, append(append([]string{"run"}, tc.args...), "--", "true")...)
		if code == 0 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "job for") || strings.Contains(errs, "job:") {
			t.Errorf("run %q: exit %d, stderr %q; want a failure saying %q, without the package's name", tc.args, code, errs, tc.want)
		}
	}
}

// TestRunMissingEnvironmentFile: a start job that systemd fails before it
// makes a run, for a missing EnvironmentFile=, is reported with the
// unit's Result (resources, as systemd-run says "Finished with result:
// resources") and the file, in the message and in --json; never as a
// bare "job for ... failed".
func TestRunMissingEnvironmentFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent.env")
	want := "environment file " + missing + ": no such file or directory"
	_, errs, code := unitrun(t, "run", "-p", "EnvironmentFile="+missing, "--", "true")
	if code != exitFailed || !strings.Contains(errs, want) || !strings.Contains(errs, "result resources") || strings.Contains(errs, "job for") {
		t.Errorf("run: exit %d, stderr %q; want 125 naming the file and the result", code, errs)
	}
	out, _, code := unitrun(t, "run", "--json", "-p", "EnvironmentFile="+missing, "--", "true")
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFailed || r.Result != "resources" || r.JobResult != "failed" || !strings.Contains(r.Error, want) {
		t.Errorf("run --json: exit %d, stdout %q (%v); want 125, result resources, job_result failed and an error naming the file", code, out, err)
	}
}

// TestRunSameDirRemoved runs "run -d" in a directory that was removed:
// the error says so, with no system call's name, and nothing runs.
func TestRunSameDirRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `cd "$1" && rmdir "$1" && exec "$2" run -d -- true`, "sh", dir, systemdtest.Binary(t))
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	want := "unitrun: --same-dir: the current directory was removed: cd to one that exists\n"
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage || errb.String() != want || out.Len() != 0 {
		t.Errorf("run -d in a removed directory: %v, stdout %q, stderr %q; want exit 2 and %q", err, out.String(), errb.String(), want)
	}
}

// TestErrorsAsUnprivileged runs unitrun as uid 65534: a command in a
// directory it may not search, and the embedded manager, which only root
// may boot, are refused with what the user gave, what is wrong and what
// to do, with no system call or temp file named.
func TestErrorsAsUnprivileged(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "unitrun")
	if out, err := exec.Command("cp", systemdtest.Binary(t), bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(private, "agent")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	emb := filepath.Join(dir, "emb")
	if err := os.Mkdir(emb, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--manager", "private:" + filepath.Join(dir, "none.sock"), "run", "--", agent}, exitCannotExec, agent + ": cannot execute: permission denied"},
		{[]string{"--manager", "embedded", "--embedded-dir", emb, "run", "--", "true"}, exitFailed, "embedded manager: booting it needs root, and this is uid 65534; as this user, reach a running manager instead: --manager user (your systemd --user), or --manager private:PATH (a manager's private socket)"},
	} {
		cmd := exec.Command("setpriv", append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", bin}, tc.args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != tc.code || errb.String() != "unitrun: "+tc.want+"\n" {
			t.Errorf("unitrun %q as uid 65534: %v, stderr %q; want exit %d and unitrun: %s", tc.args, err, errb.String(), tc.code, tc.want)
		}
	}
	if entries, _ := os.ReadDir(emb); len(entries) > 0 {
		t.Errorf("the embedded manager's dir holds %d entries after a refused boot, want none", len(entries))
	}
}
