package job_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

func TestMain(m *testing.M) { systemdtest.Main(m) }

func sh(t *testing.T, script string, args ...string) *job.Cmd {
	t.Helper()
	return job.Command(systemdtest.Conn(t), "/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
}

// gone reports whether the test manager unloads the unit.
func gone(t *testing.T, name string) bool {
	t.Helper()
	return systemdtest.Unloaded(t, systemdtest.Conn(t), name)
}

func TestExitCodes(t *testing.T) {
	for _, code := range []int{0, 1, 3, 255} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			c := sh(t, "echo out; echo err >&2; exit $1", fmt.Sprint(code))
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			err := c.Run()
			if code == 0 {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			} else {
				var ee *job.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("Run: %v (%T), want *job.ExitError", err, err)
				}
				if ee.Result != "exit-code" {
					t.Errorf("Result = %q, want exit-code", ee.Result)
				}
			}
			st := c.Status
			if st.ExitCode != code || st.Signal != 0 {
				t.Errorf("status = %+v, want exit code %d", st, code)
			}
			if out.String() != "out\n" || errb.String() != "err\n" {
				t.Errorf("stdout %q stderr %q", out.String(), errb.String())
			}
			if len(st.InvocationID) != 32 {
				t.Errorf("InvocationID = %q, want 32 hex digits", st.InvocationID)
			}
			if st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
				t.Errorf("times: started %v finished %v", st.StartedAt, st.FinishedAt)
			}
			if !gone(t, c.Unit) {
				t.Errorf("unit %s still loaded after Run", c.Unit)
			}
		})
	}
}

func TestKilledBySignal(t *testing.T) {
	for _, tc := range []struct {
		sig    syscall.Signal
		result string
	}{
		{syscall.SIGKILL, "signal"},
		// systemd counts a SIGTERM death of a service as clean; unitrun
		// reports the signal all the same.
		{syscall.SIGTERM, "success"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			err := sh(t, "kill -"+fmt.Sprint(int(tc.sig))+" $$; sleep 10").Run()
			var ee *job.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("Run: %v, want *job.ExitError", err)
			}
			if ee.Signal != tc.sig || ee.ExitCode != 128+int(tc.sig) {
				t.Errorf("status %+v, want signal %d (exit status %d)", ee.Status, tc.sig, 128+int(tc.sig))
			}
			if ee.Result != tc.result {
				t.Errorf("Result = %q, want %q", ee.Result, tc.result)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	c := sh(t, "sleep 30")
	c.Timeout = 300 * time.Millisecond
	err := c.Run()
	var ee *job.ExitError
	if !errors.As(err, &ee) || ee.Result != "timeout" {
		t.Fatalf("Run: %v, want an ExitError with Result timeout", err)
	}
	if !gone(t, c.Unit) {
		t.Errorf("unit %s still loaded", c.Unit)
	}
}

func TestCommandNotFound(t *testing.T) {
	c := job.Command(systemdtest.Conn(t), "no-such-command-unitrun")
	err := c.Run()
	if !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Run: %v, want exec.ErrNotFound", err)
	}
	if c.Unit != "" {
		t.Errorf("a unit %s was created for a missing command", c.Unit)
	}
	err = job.Command(systemdtest.Conn(t), "/no/such/file").Run()
	if !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Run(/no/such/file): %v, want exec.ErrNotFound", err)
	}
}

func TestNameCollision(t *testing.T) {
	name := unit.RandomName("unitrun-test-collide-", "service")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := job.CommandContext(ctx, systemdtest.Conn(t), "/bin/sleep", "30")
	first.Name = name
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	second := job.Command(systemdtest.Conn(t), "/bin/true")
	second.Name = name
	err := second.Run()
	if !errors.Is(err, job.ErrUnitExists) {
		t.Fatalf("second Run: %v, want ErrUnitExists", err)
	}
	// The first unit is untouched: still running.
	p, err := systemdtest.Conn(t).Properties(ctx, name, manager.UnitIface)
	if err != nil || p["ActiveState"].Value() != "active" {
		t.Fatalf("first unit: %v %v, want active", p["ActiveState"], err)
	}
	cancel()
	if err := first.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("first Wait: %v, want context.Canceled", err)
	}
}

// nasty are strings that a shell, a unit file or a specifier expansion
// would change.
var nasty = []string{
	"two words", `"double"`, "'single'", "%h %n %%", "$HOME ${HOME} $$", "new\nline", "tab\there",
	`back\slash`, "\xff\xfe not utf-8", "", "-", ";|&<>*?~", "é ü ☃",
}

func TestArgvExact(t *testing.T) {
	c := sh(t, `printf '%s\0' "$@"`, nasty...)
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(nasty, "\x00") + "\x00"
	if string(out) != want {
		t.Errorf("argv came back as %q, want %q", out, want)
	}
}

// TestArgvExactAcrossReload has the manager daemon-reload between the
// unit's creation and its command's exec (an ExecStartPre= sleeps): the
// words with '$' and ';', all valid UTF-8, still arrive as given, which
// they do not over D-Bus (systemd 252 reads them back from the transient
// unit's file with escapes added), and the drop-in that carries them is
// gone after the run.
func TestArgvExactAcrossReload(t *testing.T) {
	var words []string
	for _, w := range append(nasty, ";", "$", "a;b$c") {
		if utf8.ValidString(w) {
			words = append(words, w)
		}
	}
	c := sh(t, `printf '%s\0' "$@"`, words...)
	c.Properties = append(c.Properties, unit.Exec("ExecStartPre", "/bin/sleep", []string{"sleep", "1"}))
	reloaded := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		reloaded <- c.Manager.Reload(context.Background())
	}()
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := <-reloaded; err != nil {
		t.Fatalf("daemon-reload: %v", err)
	}
	if want := strings.Join(words, "\x00") + "\x00"; string(out) != want {
		t.Errorf("argv came back as %q, want %q", out, want)
	}
	if _, err := os.Lstat(filepath.Join(systemdtest.TransientUnitDir(t), c.Unit+".d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in dir of %s after the run: %v, want it gone", c.Unit, err)
	}
}

func TestEnvExact(t *testing.T) {
	var env []string
	var script strings.Builder
	for i, v := range nasty {
		if !utf8.ValidString(v) {
			continue // systemd refuses such values; see TestEnvNotUTF8
		}
		env = append(env, fmt.Sprintf("V%d=%s", i, v))
		fmt.Fprintf(&script, `printf '%%s\0' "$V%d";`, i)
	}
	c := sh(t, script.String())
	c.Env = env
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, v := range nasty {
		if utf8.ValidString(v) {
			want.WriteString(v + "\x00")
		}
	}
	if string(out) != want.String() {
		t.Errorf("env came back as %q, want %q", out, want.String())
	}
}

// systemd ignores environment assignments that are not valid UTF-8, so
// unitrun refuses them before creating anything.
func TestEnvNotUTF8(t *testing.T) {
	c := sh(t, "true")
	c.Env = []string{"OK=1", "BAD=\xff"}
	err := c.Run()
	if err == nil || !strings.Contains(err.Error(), "Env[1]") || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("Run: %v, want an error naming Env[1] and UTF-8", err)
	}
	if c.Unit != "" {
		t.Errorf("unit %s created for a refused command", c.Unit)
	}
}

func TestLargeBinaryOutput(t *testing.T) {
	const size = 20 << 20
	data := make([]byte, size)
	rand.Read(data)
	src := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c := sh(t, `cat "$1"; cat "$1" >&2`, src)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) || !bytes.Equal(errb.Bytes(), data) {
		t.Errorf("got %d bytes on stdout and %d on stderr, want %d identical bytes on each", out.Len(), errb.Len(), size)
	}
}

func TestStdin(t *testing.T) {
	in := "line one\n\x00binary\xff\nlast"
	c := sh(t, "cat")
	c.Stdin = strings.NewReader(in)
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("stdin came back as %q, want %q", out, in)
	}
	// A command that never reads its stdin still finishes.
	c = sh(t, "exit 0")
	c.Stdin = bytes.NewReader(make([]byte, 1<<20))
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
}

func TestCancelStopsUnitAndChildren(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	marker := filepath.Join(t.TempDir(), "child.pid")
	c := job.CommandContext(ctx, systemdtest.Conn(t), "/bin/sh", "-c", `sleep 300 & echo $! > "$1"; wait`, "sh", marker)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for range 200 {
		if b, err := os.ReadFile(marker); err == nil && len(b) > 1 {
			fmt.Sscan(string(b), &pid)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the child never started")
	}
	cancel()
	err := c.Wait()
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("Wait: %v, want an error saying canceled", err)
	}
	if systemdtest.Alive(pid) {
		t.Errorf("child %d still alive after cancel", pid)
	}
	if !gone(t, c.Unit) {
		t.Errorf("unit %s still loaded after cancel", c.Unit)
	}
}

func TestConcurrentOnOneConnection(t *testing.T) {
	conn := systemdtest.Dial(t)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := job.Command(conn, "/bin/sh", "-c", `echo "$1"; exit $(($1 % 7))`, "sh", fmt.Sprint(i))
			out, err := c.Output()
			if string(out) != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Errorf("job %d: output %q", i, out)
				return
			}
			if c.Status == nil || c.Status.ExitCode != i%7 {
				errs <- fmt.Errorf("job %d: status %+v (err %v), want exit code %d", i, c.Status, err, i%7)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDaemonReexecWhileRunning: a run whose manager re-executes while it
// runs is reported with its exit status and output, on the manager's
// private socket and over its bus.
func TestDaemonReexecWhileRunning(t *testing.T) {
	for _, over := range []string{"socket", "bus"} {
		t.Run(over, func(t *testing.T) { reexecWhileRunning(t, dialOver(t, over)) })
	}
}

func reexecWhileRunning(t *testing.T, conn *manager.Conn) {
	c := job.Command(conn, "/bin/sh", "-c", "sleep 1; echo done; exit 7")
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := systemdtest.Dial(t).Reexecute(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	var ee *job.ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 7 {
		t.Fatalf("Wait after daemon-reexec: %v, want exit status 7", err)
	}
	if out.String() != "done\n" {
		t.Errorf("output %q", out.String())
	}
	// The connection serves new commands after the reexec.
	if err := job.Command(conn, "/bin/true").Run(); err != nil {
		t.Fatal(err)
	}
}

// TestRestartsAcrossDaemonReexec: a run that Restart= restarts is waited
// for through its restarts while the manager re-executes again and again,
// on its socket and over its bus: every run is made and the last one is
// reported, not a read lost with the connection.
func TestRestartsAcrossDaemonReexec(t *testing.T) {
	for _, over := range []string{"socket", "bus"} {
		t.Run(over, func(t *testing.T) {
			counter := filepath.Join(t.TempDir(), "n")
			c := job.Command(dialOver(t, over), "/bin/sh", "-c", `n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n >"$1"; sleep 0.05; [ $n -ge 8 ] || exit 7`, "sh", counter)
			c.Properties = []unit.Property{
				{Name: "Restart", Value: dbus.MakeVariant("on-failure")},
				{Name: "RestartUSec", Value: dbus.MakeVariant(uint64(50000))},
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			ctl := systemdtest.Dial(t)
			var stop atomic.Bool
			reexecs := make(chan int)
			go func() {
				n := 0
				for ; !stop.Load(); n++ {
					if err := ctl.Reexecute(context.Background()); err != nil {
						t.Error(err)
						break
					}
					// At a new point of a run or back-off each time.
					time.Sleep(time.Duration(50+mrand.IntN(100)) * time.Millisecond)
				}
				reexecs <- n
			}()
			err := c.Wait()
			stop.Store(true)
			t.Logf("%d reexecs while the unit ran; %d restarts", <-reexecs, c.Status.Restarts)
			if err != nil || c.Status.ExitCode != 0 {
				t.Errorf("Wait: %v, status %+v; want the last run's exit 0", err, c.Status)
			}
			if b, _ := os.ReadFile(counter); string(b) != "8\n" {
				t.Errorf("the command ran %q times, want 8", b)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "count")
	c := sh(t, `n=$(cat "$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1"; [ $n -ge 3 ] || exit 5`, counter)
	c.Retry = &job.RetryPolicy{Attempts: 5, Delay: 10 * time.Millisecond, ExitCodes: []int{5}}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if c.Status.Attempts != 3 {
		t.Errorf("Attempts = %d, want 3", c.Status.Attempts)
	}
	// An exit code the policy does not name is final.
	c = sh(t, "exit 4")
	c.Retry = &job.RetryPolicy{Attempts: 5, ExitCodes: []int{5}}
	var ee *job.ExitError
	if err := c.Run(); !errors.As(err, &ee) || ee.Attempts != 1 {
		t.Errorf("Run: %v (attempts %v), want one attempt failing with 4", err, c.Status)
	}
	// Attempts run out.
	c = sh(t, "exit 5")
	c.Retry = &job.RetryPolicy{Attempts: 2, ExitCodes: []int{5}}
	if err := c.Run(); !errors.As(err, &ee) || ee.Attempts != 2 || ee.ExitCode != 5 {
		t.Errorf("Run: %v, want two attempts failing with 5", err)
	}
}

// TestRetryFixedName reruns a command under a fixed unit name, with no
// back-off, many times over: each next run takes the name as soon as the
// one before it is released, which systemd completes only after the
// release's calls have returned (the AddRef reference, the pin), so every
// run must wait for the name before it claims it, or fail as taken.
func TestRetryFixedName(t *testing.T) {
	for i := range 15 {
		counter := filepath.Join(t.TempDir(), "count")
		// The script's "$" and ";" take the drop-in path, which claims the name.
		c := sh(t, `n=$(cat "$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1"; [ $n -ge 3 ] || exit 5`, counter)
		c.Name = unit.RandomName("unitrun-test-retry-", "service")
		c.Pin = true
		c.Retry = &job.RetryPolicy{Attempts: 5, ExitCodes: []int{5}}
		c.Exited = func(*job.Status, error) {}
		if err := c.Run(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if b, _ := os.ReadFile(counter); c.Status.Attempts != 3 || string(b) != "3\n" {
			t.Fatalf("round %d: %d attempts, %q counted; want 3", i, c.Status.Attempts, b)
		}
		if !gone(t, c.Name) {
			t.Errorf("round %d: %s still loaded", i, c.Name)
		}
	}
	// A run that ends while starting (its ExecStartPre= fails, so the
	// start job fails) is followed in the same way.
	for i := range 5 {
		counter := filepath.Join(t.TempDir(), "count")
		pre, err := unit.ParseProperty(`ExecStartPre=/bin/sh -c 'n=$$(cat "$$1" 2>/dev/null || echo 0); n=$$((n+1)); echo $$n > "$$1"; [ $$n -ge 3 ]' sh ` + counter)
		if err != nil {
			t.Fatal(err)
		}
		c := job.Command(systemdtest.Conn(t), "/bin/true")
		c.Name = unit.RandomName("unitrun-test-retry-", "service")
		c.Properties = pre
		c.Pin = true
		c.Retry = &job.RetryPolicy{Attempts: 5}
		if err := c.Run(); err != nil {
			t.Fatalf("start-failure round %d: %v", i, err)
		}
		if b, _ := os.ReadFile(counter); c.Status.Attempts != 3 || string(b) != "3\n" {
			t.Fatalf("start-failure round %d: %d attempts, %q counted; want 3", i, c.Status.Attempts, b)
		}
		if !gone(t, c.Name) {
			t.Errorf("start-failure round %d: %s still loaded", i, c.Name)
		}
	}
}

func TestBindToCaller(t *testing.T) {
	conn := systemdtest.Conn(t)
	bin := systemdtest.Binary(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The caller runs in a unit of the manager, and starts the bound work.
	caller := job.Command(conn, bin, "run", "--bind-to-caller", "-q", "--", "/bin/sh", "-c", `echo $$ > "$1"; exec sleep 300`, "sh", pidFile)
	caller.Env = []string{manager.EnvManager + "=" + os.Getenv(manager.EnvManager)}
	var callerOut bytes.Buffer
	caller.Stdout, caller.Stderr = &callerOut, &callerOut
	if err := caller.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for range 300 {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 1 {
			fmt.Sscan(string(b), &pid)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		caller.Wait()
		t.Fatalf("bound work never started; caller said: %s", callerOut.String())
	}
	bound, err := conn.UnitByPID(context.Background(), uint32(pid))
	if err != nil {
		t.Fatal(err)
	}
	// Stop the caller's unit from outside; nobody cancels the work.
	if _, err := conn.StopUnit(context.Background(), caller.Unit, "replace"); err != nil {
		t.Fatal(err)
	}
	caller.Wait()
	if !gone(t, bound) {
		t.Errorf("bound unit %s still loaded after its caller stopped", bound)
	}
	if systemdtest.Alive(pid) {
		t.Errorf("bound work %d still alive", pid)
	}
}

func TestStartExistingUnit(t *testing.T) {
	dir := systemdtest.RuntimeUnitDir(t)
	oneshot := unit.RandomName("unitrun-test-oneshot-", "service")
	simple := unit.RandomName("unitrun-test-simple-", "service")
	systemdtest.WriteUnit(t, filepath.Join(dir, oneshot), "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'exit 6'\n")
	systemdtest.WriteUnit(t, filepath.Join(dir, simple), "[Service]\nType=simple\nExecStart=/bin/sh -c 'sleep 0.2; kill -9 $$$$'\n")
	if err := systemdtest.Conn(t).Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := job.Unit(systemdtest.Conn(t), oneshot).Run(ctx)
	var ee *job.ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 6 || ee.JobResult != "failed" {
		t.Errorf("Start(oneshot): %v, want exit status 6 with job result failed", err)
	}
	_, err = job.Unit(systemdtest.Conn(t), simple).Run(ctx)
	if !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Errorf("Start(simple): %v, want killed by SIGKILL", err)
	}
	for _, n := range []string{oneshot, simple} {
		systemdtest.Conn(t).ResetFailedUnit(ctx, n)
	}
	if _, err := job.Unit(systemdtest.Conn(t), "unitrun-test-missing.service").Run(ctx); err == nil {
		t.Error("Start of a missing unit succeeded")
	}
}

// A cancel that lands while systemd is creating the unit still stops and
// releases it: no unit is left behind, whatever the timing.
func TestCancelDuringStart(t *testing.T) {
	conn := systemdtest.Dial(t)
	for i := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		c := job.CommandContext(ctx, conn, "/bin/sleep", "30")
		go func() {
			time.Sleep(time.Duration(i) * 200 * time.Microsecond)
			cancel()
		}()
		err := c.Run()
		if err == nil {
			t.Fatalf("run %d: sleep 30 finished despite the cancel", i)
		}
		if c.Unit != "" && c.Status == nil {
			t.Errorf("run %d: canceled with unit %s but no Status (%v)", i, c.Unit, err)
		}
		if c.Unit != "" && !gone(t, c.Unit) {
			t.Errorf("run %d: unit %s left behind after a cancel during start (%v)", i, c.Unit, err)
		}
		cancel()
	}
}

// TestDropInAcrossRestartAndReload: the drop-in that carries a command
// line with '$' lives through the back-off between two runs of Restart=,
// so a daemon-reload then keeps the unit's command and every run is made;
// systemd removes it with the unit.
func TestDropInAcrossRestartAndReload(t *testing.T) {
	ctx := context.Background()
	counter := filepath.Join(t.TempDir(), "n")
	c := sh(t, `n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n >"$1"; [ $n -ge 3 ] || exit 7`, counter)
	c.Properties = []unit.Property{
		{Name: "Restart", Value: dbus.MakeVariant("on-failure")},
		{Name: "RestartUSec", Value: dbus.MakeVariant(uint64(time.Second / time.Microsecond))},
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	dropIn := filepath.Join(systemdtest.TransientUnitDir(t), c.Unit+".d")
	systemdtest.WaitSubState(t, c.Manager, c.Unit, "auto-restart")
	if _, err := os.Lstat(dropIn); err != nil {
		t.Errorf("drop-in during the back-off: %v, want it there", err)
	}
	if err := c.Manager.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil || c.Status.Restarts != 2 {
		t.Errorf("Wait: %v, status %+v; want exit 0 after 2 restarts", err, c.Status)
	}
	if b, _ := os.ReadFile(counter); string(b) != "3\n" {
		t.Errorf("the command ran %q times, want 3", b)
	}
	if !gone(t, c.Unit) {
		t.Errorf("unit %s left loaded", c.Unit)
	}
	if _, err := os.Lstat(dropIn); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("drop-in dir after the run: %v, want it gone", err)
	}
}

// TestRunThroughRestarts: a Cmd whose Properties set Restart= runs until
// systemd makes no further run; every run's output reaches the Cmd's
// writers, whether a buffer (a pipe unitrun copies) or a regular file
// (put behind one: systemd reopens the unit's streams for each run), and
// the Status is the last run's, with the restart count. Nothing is left.
func TestRunThroughRestarts(t *testing.T) {
	const script = `n=$(( $(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $n >"$1"; echo "out $n"; echo "err $n" >&2; [ $n -ge 3 ] || exit 3`
	restart := []unit.Property{
		{Name: "Restart", Value: dbus.MakeVariant("on-failure")},
		{Name: "RestartUSec", Value: dbus.MakeVariant(uint64(50000))},
	}
	tmp := t.TempDir()
	c := sh(t, script, filepath.Join(tmp, "n1"))
	c.Properties = restart
	var errb bytes.Buffer
	c.Stderr = &errb
	out, err := c.Output()
	if err != nil || string(out) != "out 1\nout 2\nout 3\n" || errb.String() != "err 1\nerr 2\nerr 3\n" || c.Status.Restarts != 2 || c.Status.ExitCode != 0 {
		t.Errorf("Output: %q, stderr %q, %v, status %+v; want three runs, the last exit 0 after 2 restarts", out, errb.String(), err, c.Status)
	}
	if !gone(t, c.Unit) {
		t.Errorf("unit %s left loaded", c.Unit)
	}
	f, err := os.Create(filepath.Join(tmp, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c = sh(t, script, filepath.Join(tmp, "n2"))
	c.Properties, c.Stdout, c.Stderr = restart, f, f
	if err := c.Run(); err != nil || c.Status.Restarts != 2 {
		t.Errorf("Run to a file: %v, status %+v", err, c.Status)
	}
	if b, _ := os.ReadFile(f.Name()); string(b) != "out 1\nerr 1\nout 2\nerr 2\nout 3\nerr 3\n" {
		t.Errorf("the file holds %q; want every run's lines in order", b)
	}
}
