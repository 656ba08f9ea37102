package podrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/pod"
)

// An app's log files are root's alone, mode 0600, as docs/pods.md says of
// the pod's state: the live log, which systemd's StandardOutput=append:
// would create 0644, and its times file.
func TestPodLogMode(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: logmode
apps:
  - name: a
    exec: ["/bin/echo", "secret"]
`, "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(pod.LogFile(r.StateDir, name, "a")), "a.*"))
	if len(files) == 0 {
		t.Fatal("no log files")
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v); want 0600", filepath.Base(f), fi.Mode().Perm(), err)
		}
	}
	if data, err := os.ReadFile(pod.LogFile(r.StateDir, name, "a")); err != nil || string(data) != "secret\n" {
		t.Errorf("log: %q (%v)", data, err)
	}
}
