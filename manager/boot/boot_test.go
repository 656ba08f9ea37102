package boot_test

import (
	"os"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

func TestMain(m *testing.M) { systemdtest.Main(m) }

// A container manager is PID 1 of its own namespaces, with its own
// hostname, and Stop leaves neither process nor cgroup behind.
func TestContainerBootAndStop(t *testing.T) {
	c := systemdtest.BootSystem(t)
	out, err := c.Command("/bin/sh", "-c", "cat /proc/1/comm; hostname; systemctl is-system-running").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "systemd\nunitrun-test\nrunning\n" {
		t.Errorf("inside the container: %q", got)
	}
	// A service started inside must not pull in the host's boot services
	// (systemd-tmpfiles-setup would empty the shared /tmp).
	marker, err := os.CreateTemp("", "unitrun-marker-")
	if err != nil {
		t.Fatal(err)
	}
	marker.Close()
	defer os.Remove(marker.Name())
	if out, err := c.Command(systemdtest.Binary(t), "run", "-q", "--", "/bin/true").CombinedOutput(); err != nil {
		t.Fatalf("unitrun run inside the container: %v\n%s", err, out)
	}
	if _, err := os.Stat(marker.Name()); err != nil {
		t.Errorf("a file in the shared temp dir vanished while the container ran a service: %v", err)
	}
	pid := c.PID()
	if err := c.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if systemdtest.Alive(pid) {
		t.Errorf("container systemd %d alive after Stop", pid)
	}
}
