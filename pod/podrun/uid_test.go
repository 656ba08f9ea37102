package podrun

import (
	"os"
	"testing"

	"github.com/unitrun/unitrun/pod"
)

// A numeric user or group without an entry in the host's passwd or group
// runs as that ID (the user with group 0 and home /, unless a group is
// given), as the kubelet runs any uid; a name without an entry is still
// refused.
func TestPodUidWithoutEntry(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: uids
apps:
  - name: user
    user: "4242"
    exec: ["/bin/sh", "-c", "echo $(id -u):$(id -g):$(id -G):$HOME"]
  - name: both
    user: "4242"
    group: "4343"
    exec: ["/bin/sh", "-c", "echo $(id -u):$(id -g):$(id -G)"]
`, "")
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	for app, want := range map[string]string{"user": "4242:0:0:/\n", "both": "4242:4343:4343\n"} {
		if data, err := os.ReadFile(pod.LogFile(r.StateDir, name, app)); err != nil || string(data) != want {
			t.Errorf("app %s printed %q (%v), want %q", app, data, err, want)
		}
	}
	_, err := r.Create(t.Context(), []byte("name: nouser\napps: [{name: a, user: no-such-user, exec: [/bin/true]}]\n"))
	if err == nil || err.Error() != `apps[0].user "no-such-user": no such user on this host` {
		t.Errorf("create with a user name without an entry: %v", err)
	}
}
