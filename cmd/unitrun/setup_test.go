package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
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
