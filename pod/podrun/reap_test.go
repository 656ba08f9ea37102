package podrun

import (
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
)

// An app that systemd stopped between two runs (pod stop in its
// RestartSec window or its back-off) ends with the exit of its last run:
// a success stays a success, a failure a failure, and the restart that
// never ran is not counted.
func TestReapEndsWithLastExit(t *testing.T) {
	for _, c := range []struct {
		result string
		code   int
		want   pod.AppState
	}{
		{"success", 0, pod.AppExited},
		{"exit-code", 3, pod.AppFailed},
	} {
		dir := t.TempDir()
		at := time.Now().Add(-time.Second).Round(0)
		s := pod.AppStatus{Name: "a", State: pod.AppRestarting, ExitCode: &c.code, Result: c.result, Restarts: 2, Backoff: time.Second, LastExitAt: at}
		if err := pod.WriteApp(dir, "p", s); err != nil {
			t.Fatal(err)
		}
		if err := Reap(dir, "p", "a"); err != nil {
			t.Fatal(err)
		}
		got, err := pod.ReadApp(dir, "p", "a")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != c.want || *got.ExitCode != c.code || got.Restarts != 2 || !got.FinishedAt.Equal(at) {
			t.Errorf("last exit %s %d: reaped as %s, exit code %d, restarts %d, finished at %v; want %s, %d, 2, %v",
				c.result, c.code, got.State, *got.ExitCode, got.Restarts, got.FinishedAt, c.want, c.code, at)
		}
	}
}
