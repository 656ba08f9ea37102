package podrun

import (
	"os"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// An app with readOnlyRoot cannot write its root file system (the host's
// here, also its home, root's, where a user manager starts it), but can
// write its terminationMessagePath and /dev, and its run
// is recorded as any other, in the pod's state, which stays writable.
func TestPodReadOnlyRoot(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	name := run(t, r, `
name: readonly
apps:
  - name: ro
    readOnlyRoot: true
    terminationMessagePath: /dev/termination-log
    exec: ["/bin/sh", "-c", "cd; touch `+dir+`/x checkfile 2>&1; echo done > /dev/termination-log; echo >/dev/null"]
  - name: rw
    exec: ["/bin/sh", "-c", "touch `+dir+`/y"]
`, "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	if data, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "ro")); strings.Count(string(data), "Read-only file system") != 2 {
		t.Errorf("ro's touch printed %q, want Read-only file system for both files", data)
	}
	if _, err := os.Stat(dir + "/x"); err == nil {
		t.Error("ro wrote to the host's file system")
	}
	if _, err := os.Stat(dir + "/y"); err != nil {
		t.Errorf("rw could not write: %v", err)
	}
	if data, _ := os.ReadFile(record.TerminationFile(r.StateDir, name, "ro")); string(data) != "done\n" {
		t.Errorf("ro's termination message %q, want done", data)
	}
}
