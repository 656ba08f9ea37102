package podrun

import (
	"testing"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// An app without a workingDir starts in /, as a container runtime starts
// a container whose spec and image name none, and so does its exec
// probe: not in the manager's own directory (a user manager's is the
// user's home), which an app running as another user could not even
// read.
func TestNoWorkingDirIsRoot(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: nowd
apps:
  - name: a
    user: "4242"
    exec: ["/bin/sh", "-c", "pwd; ls -d . && exec sleep 600"]
    readinessProbe:
      exec: ["/bin/sh", "-c", "pwd; ls -d .; exit 1"]
      periodSeconds: 1
      failureThreshold: 100
`, "")
	waitLog(t, r, name, "a", "/\n.\n")
	s := poll(t, r, name, func(s pod.PodStatus) bool {
		p := s.Apps[0].Readiness
		return p != nil && p.LastResult == record.ProbeFailure && p.Message != ""
	})
	if got := s.Apps[0].Readiness.Message; got != "/\n.\n" {
		t.Errorf("exec probe of an app without a workingDir printed %q; want %q", got, "/\n.\n")
	}
}
