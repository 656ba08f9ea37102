package podrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
)

// systemctl runs systemctl --user on the test manager; its error holds
// the command's output.
func systemctl(args ...string) error {
	out, err := exec.Command("systemctl", append([]string{"--user"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// ranApp returns the manifest of pod name, one app that writes "ran" into a
// new file, and that file's path.
func ranApp(t *testing.T, name string) (manifest, file string) {
	file = filepath.Join(t.TempDir(), "ran")
	return "name: " + name + "\napps:\n  - name: a\n    exec: [\"/bin/sh\", \"-c\", \"echo ran > " + file + "\"]\n", file
}

// wantRan checks that pod name succeeded and its app wrote file.
func wantRan(t *testing.T, r *Runner, name, file string) {
	t.Helper()
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	if data, err := os.ReadFile(file); err != nil || string(data) != "ran\n" {
		t.Errorf("the pod's app did not run its command: %q, %v", data, err)
	}
}

// TestCreateRemoveWithoutReload creates, runs and removes a pod while
// another loaded unit's file has changed on disk: the pod runs, its units
// are gone after pod rm, and the other unit still needs a daemon-reload,
// so neither create nor rm made one.
func TestCreateRemoveWithoutReload(t *testing.T) {
	mgr := systemdtest.Conn(t)
	const other = "unitrun-test-changed.service"
	path := filepath.Join(systemdtest.RuntimeUnitDir(t), other)
	systemdtest.WriteUnit(t, path, "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n")
	if err := systemctl("start", other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { systemctl("stop", other) })
	if err := os.WriteFile(path, []byte("[Service]\nType=oneshot\nExecStart=/bin/false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	needsReload := func() bool {
		t.Helper()
		props, err := mgr.Properties(context.Background(), other, manager.UnitIface)
		if err != nil {
			t.Fatal(err)
		}
		return props["NeedDaemonReload"].Value() == true
	}
	if !needsReload() {
		t.Fatalf("%s: NeedDaemonReload is false after its file changed", other)
	}
	r := newRunner(t)
	manifest, file := ranApp(t, "noreload")
	ctx := context.Background()
	m, err := r.Create(ctx, []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, m.Name, ""); err != nil {
		t.Fatal(err)
	}
	wantRan(t, r, m.Name, file)
	if err := r.Remove(ctx, m.Name, false); err != nil {
		t.Fatal(err)
	}
	if left, err := mgr.ListUnitNames(ctx, "unitrun-pod-"); err != nil || len(left) != 0 {
		t.Errorf("units left after pod rm: %v, %v", left, err)
	}
	if !needsReload() {
		t.Errorf("%s no longer needs a daemon-reload: pod create or rm made one", other)
	}
}

// TestCreateReloadsForStaleUnit creates a pod one of whose units the
// manager still holds from an older file of that name (a failed unit, kept
// in memory): the pod runs its own app, so the manager was reloaded.
func TestCreateReloadsForStaleUnit(t *testing.T) {
	const name = "stale"
	app := pod.AppUnit(name, "a")
	path := filepath.Join(systemdtest.RuntimeUnitDir(t), app)
	if err := os.WriteFile(path, []byte("[Service]\nType=oneshot\nExecStart=/bin/false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := systemctl("start", app); err == nil {
		t.Fatalf("%s started with ExecStart=/bin/false", app)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t)
	manifest, file := ranApp(t, name)
	wantRan(t, r, run(t, r, manifest, ""), file)
}
