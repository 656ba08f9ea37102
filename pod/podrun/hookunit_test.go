package podrun

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// A pod's hooks run by hand, outside the units they belong to (as one who
// took the start hook for "unitrun pod exec" might run it), are refused with exit status 2, by unitrun and by the small hook binary
// alike: the running app's record is unchanged, its command runs on,
// recorded, and the pod is not ended; its exit, when the pod is stopped,
// is the real app's.
func TestHooksRefusedByHand(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, "name: web\napps:\n  - name: ticker\n    exec: [\"/bin/sleep\", \"600\"]\n", "")
	waitStarted(t, r, name, "ticker")
	was, err := record.ReadApp(r.StateDir, name, "ticker")
	if err != nil {
		t.Fatal(err)
	}
	waitCommand(t, was.PID, "/bin/sleep\x00600\x00")
	hook := pod.HookPath(r.Binary)
	by := func(h string, args ...string) []string {
		return append([]string{"pod", record.HookCommand, h, "--state-dir", r.StateDir}, args...)
	}
	for _, argv := range [][]string{
		append([]string{r.Binary}, by(record.HookStart, name, "ticker")...),
		append([]string{hook, r.Binary}, by(record.HookStart, name, "ticker")...),
		append([]string{r.Binary}, by(record.HookReapApp, name, "ticker")...),
		append([]string{hook, r.Binary}, by(record.HookReapApp, name, "ticker")...),
		append([]string{r.Binary}, by(record.HookEnd, name, "ticker")...),
		append([]string{r.Binary}, by(pod.HookShutdown, name)...),
		append([]string{r.Binary}, by(pod.HookReap, name, "ticker")...),
	} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "refused outside its unit") {
			t.Errorf("%q by hand: exit status %d, output %q; want 2, refused outside its unit", argv, code, out)
		}
	}
	now, err := record.ReadApp(r.StateDir, name, "ticker")
	if err != nil {
		t.Fatal(err)
	}
	if now.State != record.AppRunning || now.PID != was.PID || !now.StartedAt.Equal(was.StartedAt) || now.Restarts != 0 {
		t.Errorf("record of ticker: %+v; want it unchanged, %+v", now, was)
	}
	if !systemdtest.Alive(was.PID) {
		t.Errorf("ticker's command (pid %d) no longer runs", was.PID)
	}
	if record.Stopping(r.StateDir, name) {
		t.Error("the pod is being stopped")
	}
	if _, err := r.Stop(context.Background(), name, time.Minute); err != nil {
		t.Fatal(err)
	}
	s := wait(t, r, name)
	if a := appOf(t, s, "ticker"); a.Signal != "TERM" || !a.StartedAt.Equal(was.StartedAt) {
		t.Errorf("ticker: signal %q, started %v; want its run, started %v, ended by the stop's TERM", a.Signal, a.StartedAt, was.StartedAt)
	}
}

// waitCommand waits until process pid runs the command whose
// /proc/PID/cmdline is cmdline.
func waitCommand(t *testing.T, pid int, cmdline string) {
	t.Helper()
	for range 1200 {
		if got, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && string(got) == cmdline {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("process %d never ran %q", pid, cmdline)
}
