package job_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit"
)

// TestWorkingDirRefused: where the manager sees the caller's file system
// (the test manager does), a Dir that cannot be entered is refused with
// its reason before any unit is created.
func TestWorkingDirRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for dir, reason := range map[string]string{"/nope": "no such file or directory", file: "not a directory"} {
		c := job.Command(systemdtest.Conn(t), "/bin/true")
		c.Dir = dir
		err := c.Run()
		if want := "working directory " + dir + ": " + reason; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run with Dir %s: %v, want an error saying %q", dir, err, want)
		}
		if c.Unit != "" {
			t.Errorf("Dir %s: unit %s created for a refused command", dir, c.Unit)
		}
	}
}

// TestSetupFailureReasons: a setting that systemd cannot apply when it
// sets up the run (the client does not check it) fails the start job
// with systemd's exit status (200/CHDIR, 217/USER, 216/GROUP); the error
// names the setting and the reason, never a bare "job ... failed", and
// no unit is left behind.
func TestSetupFailureReasons(t *testing.T) {
	for _, tc := range []struct {
		prop, value, want string
	}{
		{"WorkingDirectory", "/nope", "working directory /nope: no such file or directory (systemd exit status 200/CHDIR)"},
		{"User", "nope", "user nope: no such user (systemd exit status 217/USER)"},
		{"Group", "nope", "group nope: no such group (systemd exit status 216/GROUP)"},
	} {
		c := job.Command(systemdtest.Conn(t), "/bin/true")
		c.Properties = []unit.Property{{Name: tc.prop, Value: dbus.MakeVariant(tc.value)}}
		err := c.Run()
		var je *job.JobError
		if !errors.As(err, &je) || je.Reason != tc.want || je.Result != "failed" {
			t.Errorf("%s=%s: %v, want a *JobError (failed) with the reason %q", tc.prop, tc.value, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "job for") {
			t.Errorf("%s=%s: error %q is a bare job failure", tc.prop, tc.value, err)
		}
		if c.Unit != "" && !gone(t, c.Unit) {
			t.Errorf("%s left behind", c.Unit)
		}
	}
}
