package pod

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// An isolated pod's app runs under the pod's own systemd, PID 1 of the
// app's PID namespace, with the pod's name as hostname; its status files
// and logs land in the state directory the runner reads.
func TestIsolatedPodOwnSystemd(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: guarded
isolation: namespaces
apps:
  - name: look
    exec: ["/bin/sh", "-c", "cat /proc/1/comm; readlink /proc/1/exe; hostname; echo $$ > /dev/null; exit 3"]
  - name: ok
    exec: ["/bin/true"]
`, "")
	defer containerLog(t, r, name)
	s := wait(t, r, name)
	wantPod(t, s, PodFailed, 3)
	wantApp(t, s, "look", AppFailed, 3)
	wantApp(t, s, "ok", AppExited, 0)
	log, err := os.ReadFile(LogFile(r.StateDir, name, "look"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 3 || lines[0] != "systemd" || !strings.HasSuffix(lines[1], "/systemd") || lines[2] != "guarded" {
		t.Errorf("the app saw PID 1 and hostname as %q", lines)
	}
	if host, _ := os.Hostname(); host == "guarded" {
		t.Errorf("the host's hostname changed to %s", host)
	}
	if c, err := ReadExitCode(r.StateDir, name, "look"); err != nil || c != 3 {
		t.Errorf("status file of look: %d, %v", c, err)
	}
}

// containerLog prints the log of isolated pod name's systemd if the test
// has failed.
func containerLog(t *testing.T, r *Runner, name string) {
	if !t.Failed() {
		return
	}
	b, err := os.ReadFile(filepath.Join(Dir(r.StateDir, name), containerRun, "unitrun-manager.log"))
	t.Logf("log of pod %s's systemd (%v):\n%s", name, err, b)
	out, _ := exec.Command("systemctl", "--user", "status", ContainerUnit(name)).CombinedOutput()
	t.Logf("%s", out)
	b, _ = os.ReadFile(filepath.Join(systemdtest.Manager(t).Dir, "manager.log"))
	t.Logf("%s", b)
}
