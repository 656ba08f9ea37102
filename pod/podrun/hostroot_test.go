package podrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// managerMounts returns the mount points under dir in the mount
// namespace of the harness's manager, where a host pod's image roots are
// mounted.
func managerMounts(t *testing.T, dir string) []string {
	t.Helper()
	mounts, err := mountsUnder(systemdtest.Manager(t).PID(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return mounts
}

// noManagerMounts checks that nothing is mounted under r's state dir in
// the manager's mount namespace once what ended (a pod) has ended.
func noManagerMounts(t *testing.T, r *Runner, what string) {
	t.Helper()
	if m := managerMounts(t, r.StateDir); len(m) > 0 {
		t.Errorf("%s left mounts in the manager's namespace: %v", what, m)
	}
}

// An app of a host pod whose image names a registry image runs in that
// image's root, which its service mounts in the manager's mount
// namespace: it prints a file that only the image has, the pod exits
// with the status of the image's entrypoint, and once the pod has ended
// nothing is left mounted under the state dir.
func TestHostPodImage(t *testing.T) {
	r, _ := runImagePod(t, "hostimaged", pod.NoIsolation)
	noManagerMounts(t, r, "the ended pod")
}

// A restarted app of a host pod runs in the root its first run mounted:
// the mount is not made twice, and it goes when the pod is stopped.
func TestHostPodImageRestartReusesRoot(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "restarts:1", image.Config{Cmd: []string{"exit", "0"}})
	r := imageRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: hostrestarts
restartBackoff: {initial: 100ms, max: 200ms}
apps:
  - name: again
    image: %s
    restartPolicy: Always
`, ref), "")
	root := pod.ImageRoot(r.StateDir, name, "again").Root()
	for {
		s, err := record.ReadAppOrNew(r.StateDir, name, "again")
		if err != nil {
			t.Fatal(err)
		}
		if s.Message != "" {
			t.Fatalf("a run failed to start: %s", s.Message)
		}
		if s.Restarts >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var n int
	for _, m := range managerMounts(t, r.StateDir) {
		if m == root {
			n++
		}
	}
	if n != 1 {
		t.Errorf("after two restarts, %d mounts at the app's root, want 1", n)
	}
	if _, err := r.Stop(context.Background(), name, 0); err != nil {
		t.Fatal(err)
	}
	noManagerMounts(t, r, "the stopped pod")
}

// A root that cannot be mounted (its writable layer is gone) fails the
// run's start, which is recorded as failed with the reason.
func TestHostPodImageMountFails(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "nomount:1", image.Config{Cmd: []string{"echo", "ran"}})
	r := imageRunner(t)
	name := create(t, r, fmt.Sprintf("name: hostnomount\napps:\n  - {name: a, image: %s}\n", ref))
	if err := os.Remove(pod.ImageRoot(r.StateDir, name, "a").Upper()); err != nil {
		t.Fatal(err)
	}
	var ended *EndedError
	if err := r.Start(context.Background(), name, ""); err != nil && !errors.As(err, &ended) {
		t.Fatal(err)
	}
	s := wait(t, r, name)
	a := appOf(t, s, "a")
	if a.State != record.AppFailed || !strings.HasPrefix(a.Message, "mount the root from image "+ref+": ") {
		t.Errorf("app a: %s, %q; want failed, with the mount's failure", a.State, a.Message)
	}
	if log, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "a")); strings.Contains(string(log), "ran") {
		t.Errorf("the app ran: %q", log)
	}
}

// An exec probe of an image app of a host pod, a unit of its own that the
// manager runs, runs in the image's root: a probe that reads a file only
// the image has succeeds.
func TestHostPodImageExecProbe(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "probed:1", image.Config{Cmd: []string{"sleep", "600"}},
		imagetest.Layer{{Path: "only-in-image", Body: "x"}})
	r := imageRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: hostprobed
apps:
  - name: app
    image: %s
    readinessProbe: {exec: [/bin/tool, cat, /only-in-image], periodSeconds: 1}
`, ref), "")
	for {
		s, err := record.ReadAppOrNew(r.StateDir, name, "app")
		if err != nil {
			t.Fatal(err)
		}
		if s.Readiness != nil {
			if s.Readiness.LastResult != record.ProbeSuccess {
				t.Errorf("the readiness probe: %+v, want a success", *s.Readiness)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := r.Stop(context.Background(), name, 0); err != nil {
		t.Fatal(err)
	}
	noManagerMounts(t, r, "the stopped pod")
}

// pod rm, forced too, refuses to delete a pod's state while something is
// still mounted under it in the manager's mount namespace (a root that
// the shutdown hook did not detach), naming the mount and how to detach
// it; once detached, the pod is removed.
func TestHostPodImageRemoveRefusedWhileMounted(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "leftmount:1", image.Config{Cmd: []string{"sleep", "600"}})
	r := imageRunner(t)
	name := runRemoved(t, r, fmt.Sprintf("name: hostleft\napps:\n  - {name: a, image: %s}\n", ref))
	if _, err := r.Stop(context.Background(), name, 0); err != nil {
		t.Fatal(err)
	}
	root := pod.ImageRoot(r.StateDir, name, "a").Root()
	pid := strconv.Itoa(systemdtest.Manager(t).PID())
	if out, err := exec.Command("nsenter", "--mount", "--target", pid, "mount", "-t", "tmpfs", "left", root).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs at the root in the manager's namespace: %v: %s", err, out)
	}
	for _, force := range []bool{false, true} {
		err := r.Remove(context.Background(), name, force)
		if err == nil || !strings.Contains(err.Error(), "pod hostleft cannot be removed: "+root+" is still mounted in the manager's mount namespace") {
			t.Errorf("pod rm (force %v) of a pod with a mount left: %v", force, err)
		}
	}
	if _, err := os.Stat(pod.ImageRoot(r.StateDir, name, "a").Upper()); err != nil {
		t.Errorf("the refused removal deleted the writable layer: %v", err)
	}
	if out, err := exec.Command("nsenter", "--mount", "--target", pid, "umount", "--lazy", root).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v: %s", err, out)
	}
	if err := r.Remove(context.Background(), name, false); err != nil {
		t.Fatal(err)
	}
}
