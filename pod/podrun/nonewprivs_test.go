package podrun

import (
	"os"
	"testing"

	"github.com/unitrun/unitrun/pod"
)

// An app with noNewPrivileges runs with the no_new_privs flag, which
// keeps setuid programs from gaining privileges, and its run is recorded
// as any other; an app without it runs without the flag.
func TestPodNoNewPrivileges(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: nnp
apps:
  - name: locked
    noNewPrivileges: true
    user: "1000"
    exec: ["/bin/sh", "-c", "grep NoNewPrivs /proc/self/status; id -u"]
  - name: open
    exec: ["/bin/sh", "-c", "grep NoNewPrivs /proc/self/status"]
`, "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	for app, want := range map[string]string{"locked": "NoNewPrivs:\t1\n1000\n", "open": "NoNewPrivs:\t0\n"} {
		if data, err := os.ReadFile(pod.LogFile(r.StateDir, name, app)); err != nil || string(data) != want {
			t.Errorf("app %s printed %q (%v), want %q", app, data, err, want)
		}
	}
}
