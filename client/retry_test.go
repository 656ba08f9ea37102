package client_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// TestRetryAcrossDaemonRestart SIGKILLs the daemon while a retried op's
// first run is running, and while it waits out the back-off after that
// run failed, once and then again while the restarted daemon waits out
// the back-off: the last daemon makes the runs that are left, and the job
// ends as if no daemon had died, each run made exactly once.
func TestRetryAcrossDaemonRestart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sleep string // the first run's length
		delay string // the back-off after it
		kills int
	}{
		{"during a run", "2", "100ms", 1},
		{"during the back-off", "0", "3s", 1},
		{"during the back-off, twice", "0", "3s", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			count := filepath.Join(t.TempDir(), "count")
			// Each run counts itself; the first sleeps; the third succeeds.
			script := `n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n > "$1"; echo run $n; if [ $n -eq 1 ]; then sleep "$2"; fi; [ $n -ge 3 ]`
			d := systemdtest.StartDaemon(t, fmt.Sprintf(`
[[op]]
name = "flaky"
exec = ["/bin/sh", "-c", %q, "sh", %q, %q]
retry = { attempts = 5, delay = %q }
`, script, count, tc.sleep, tc.delay))
			c := client.New(d.API)
			ctx := timeout(t)
			id, err := c.Call(ctx, "flaky", nil)
			if err != nil {
				t.Fatal(err)
			}
			// Kill once the first run has counted itself and, for the
			// back-off cases, has ended: its unit stays loaded, failed,
			// through the back-off, the restarted daemon's too.
			for k := range tc.kills {
				if k > 0 {
					// The restarted daemon re-attaches at once, then
					// waits out the back-off's 3 s holding the unit.
					time.Sleep(time.Second)
				}
				for {
					b, _ := os.ReadFile(count)
					if n := strings.TrimSpace(string(b)); n != "" && n != "1" {
						t.Fatalf("run %s started before the daemon was killed", n)
					}
					rec, err := c.Job(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if strings.TrimSpace(string(b)) == "1" && (tc.sleep != "0" || failed(t, rec.Unit)) {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				d.Cmd.Process.Signal(syscall.SIGKILL)
				d.Cmd.Wait()
				d.Start(t)
			}
			rec, err := c.Wait(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.State != api.StateSucceeded || rec.Attempts != 3 || rec.OutputTail != "run 1\nrun 2\nrun 3\n" {
				t.Errorf("record %+v: want succeeded after 3 attempts, each run's output once", rec)
			}
			if b, _ := os.ReadFile(count); string(b) != "3\n" {
				t.Errorf("runs counted: %q, want 3", b)
			}
		})
	}
}

// failed reports whether the unit of the name is failed.
func failed(t *testing.T, name string) bool {
	t.Helper()
	props, err := systemdtest.Conn(t).Properties(timeout(t), name, manager.UnitIface)
	if err != nil {
		t.Fatal(err)
	}
	return props["ActiveState"].Value() == "failed"
}
