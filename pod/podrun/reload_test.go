package podrun

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// TestPodSurvivesManagerReloadReexec runs a pod of apps that end with
// their own exit codes at different times while the manager is
// daemon-reloaded and then daemon-reexecuted: the pod's status and every
// app's status file are still exact.
func TestPodSurvivesManagerReloadReexec(t *testing.T) {
	r := newRunner(t)
	var b strings.Builder
	b.WriteString("name: reload\nexitPolicy: all\napps:\n")
	for i := range 6 {
		fmt.Fprintf(&b, "  - name: app%d\n    exec: [\"/bin/sh\", \"-c\", \"sleep %.1f; exit %d\"]\n", i, 0.4+0.5*float64(i), i)
	}
	name := run(t, r, b.String(), "")
	mgr := systemdtest.Dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	time.Sleep(200 * time.Millisecond)
	if err := mgr.Reload(ctx); err != nil {
		t.Fatalf("daemon-reload: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := mgr.Reexecute(ctx); err != nil {
		t.Fatalf("daemon-reexec: %v", err)
	}
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 1) // the first app to fail
	wantApp(t, s, "app0", record.AppExited, 0)
	for i := 1; i < 6; i++ {
		app := fmt.Sprintf("app%d", i)
		wantApp(t, s, app, record.AppFailed, i)
		if c, err := record.ReadExitCode(r.StateDir, name, app); err != nil || c != i {
			t.Errorf("%s's status file: %d, %v; want %d", app, c, err, i)
		}
	}
}
