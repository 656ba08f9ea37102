package job_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// TestExitedBeforeRelease checks that Exited reports the final outcome
// once, while the unit is still loaded (kept for its client, inactive
// after a success, failed after a failure), and that Run still releases
// the unit before it returns.
func TestExitedBeforeRelease(t *testing.T) {
	conn := systemdtest.Conn(t)
	for _, tc := range []struct {
		code  int
		state string
	}{{0, "inactive"}, {3, "failed"}} {
		c := sh(t, fmt.Sprintf("exit %d", tc.code))
		var calls, code int
		var state string
		c.Exited = func(st *job.Status, err error) {
			calls++
			if st == nil {
				t.Errorf("Exited(nil, %v): want the run's Status", err)
				return
			}
			code = st.ExitCode
			p, perr := conn.Properties(context.Background(), c.Unit, manager.UnitIface)
			if perr != nil {
				t.Error(perr)
				return
			}
			state, _ = p["ActiveState"].Value().(string)
			if p["LoadState"].Value() != "loaded" {
				state += " and " + fmt.Sprint(p["LoadState"].Value())
			}
		}
		err := c.Run()
		if c.Status == nil || c.Status.ExitCode != tc.code || (err == nil) != (tc.code == 0) {
			t.Fatalf("Run: %v (status %v), want exit status %d", err, c.Status, tc.code)
		}
		if calls != 1 || code != tc.code {
			t.Errorf("exit %d: Exited called %d times with exit code %d, want once with %d", tc.code, calls, code, tc.code)
		}
		if state != tc.state {
			t.Errorf("exit %d: unit's ActiveState when Exited ran = %q, want %q (not yet released)", tc.code, state, tc.state)
		}
		if !gone(t, c.Unit) {
			t.Errorf("%s still loaded after Run", c.Unit)
		}
	}
}

// TestExitedOnceAfterRetries checks that Exited is told only the final
// attempt's outcome.
func TestExitedOnceAfterRetries(t *testing.T) {
	c := sh(t, "exit 5")
	c.Retry = &job.RetryPolicy{Attempts: 3, Delay: 10 * time.Millisecond}
	var attempts []int
	c.Exited = func(st *job.Status, err error) { attempts = append(attempts, st.Attempts) }
	if err := c.Run(); err == nil {
		t.Fatal("Run succeeded, want exit status 5")
	}
	if len(attempts) != 1 || attempts[0] != 3 {
		t.Errorf("Exited saw attempts %v, want [3]", attempts)
	}
}

// TestExitedNotFound checks that a command that never ran is reported
// too, with a nil Status.
func TestExitedNotFound(t *testing.T) {
	c := job.Command(systemdtest.Conn(t), "/nonexistent/unitrun-test")
	var called bool
	c.Exited = func(st *job.Status, err error) { called = st == nil && err != nil }
	if err := c.Run(); err == nil {
		t.Fatal("Run succeeded")
	}
	if !called {
		t.Error("Exited not called with a nil Status and the error")
	}
}
