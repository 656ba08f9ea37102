package main

import (
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
