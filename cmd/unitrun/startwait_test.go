package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// counterScript is a oneshot's command that numbers its runs (in the file
// $1), prints to stdout and stderr, with a "<3>" (error) prefix on one
// line, and ends with a line without a newline, then exits 3.
const counterScript = `n=$$(( $$(cat "$1" 2>/dev/null || echo 0) + 1 )); echo $$n >"$1"; ` +
	`echo "out $$n"; echo "err $$n" >&2; echo "<3>bad $$n" >&2; printf "tail $$n"; exit 3`

// writeService writes a unit file into the test manager's runtime unit
// directory, reloads it, and when the test ends stops the unit and resets
// it so that nothing of it stays loaded.
func writeService(t *testing.T, name, text string) {
	t.Helper()
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), name), text)
	conn := systemdtest.Conn(t)
	conn.Reload(context.Background())
	t.Cleanup(func() {
		ctx := context.Background()
		conn.StopUnit(ctx, name, "replace")
		conn.ResetFailedUnit(ctx, name)
	})
}

// TestStartShowsOutput starts a oneshot twice: each start shows exactly
// what that run logged, its stdout and stderr lines on stdout and its
// error line on stderr, never a line of the run before; -q shows nothing.
func TestStartShowsOutput(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "n")
	writeService(t, "unitrun-test-output.service",
		"[Service]\nType=oneshot\nExecStart=/bin/sh -c '"+counterScript+"' sh "+counter+"\n")
	for n, want := range []string{"out 1\nerr 1\ntail 1", "out 2\nerr 2\ntail 2"} {
		out, errs, code := unitrun(t, "start", "unitrun-test-output.service")
		if code != 3 || out != want {
			t.Errorf("run %d: exit %d, stdout %q; want 3 and %q (stderr %q)", n+1, code, out, want, errs)
		}
		if bad := "bad " + string(rune('1'+n)) + "\n"; !strings.HasPrefix(errs, bad) || strings.Count(errs, "bad") != 1 {
			t.Errorf("run %d: stderr %q; want %q then the summary line", n+1, errs, bad)
		}
	}
	out, errs, code := unitrun(t, "start", "-q", "unitrun-test-output.service")
	if code != 3 || out != "" || errs != "" {
		t.Errorf("start -q: exit %d, stdout %q, stderr %q; want 3 and nothing", code, out, errs)
	}
}

// TestStartOutputEmbedded boots an embedded manager of the test's own: a
// unit started on it shows its output, and the journalctl line that
// "manager env" prints reads that output from its journal.
func TestStartOutputEmbedded(t *testing.T) {
	e := systemdtest.OwnEmbedded(t)
	dir := e.Dir
	env := []string{"PATH=" + os.Getenv("PATH"), manager.EnvEmbeddedDir + "=" + dir, manager.EnvManager + "=embedded"}
	cli := func(args ...string) (string, string, int) {
		cmd := exec.Command(systemdtest.Binary(t), args...)
		cmd.Env = env
		var out, errs strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), errs.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errs.String(), 0
	}
	if _, errs, code := cli("manager", "start"); code != 0 {
		t.Fatalf("manager start: exit %d: %s", code, errs)
	}
	ctx := context.Background()
	c, err := manager.Dial(ctx, e.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	units, err := c.RuntimeUnitDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(dir, "n")
	text := "[Service]\nType=oneshot\nExecStart=/bin/sh -c '" + counterScript + "' sh " + counter + "\n"
	if err := os.WriteFile(filepath.Join(units, "emb-output.service"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Reload(ctx)
	out, errs, code := cli("start", "emb-output.service")
	if code != 3 || out != "out 1\nerr 1\ntail 1" || !strings.HasPrefix(errs, "bad 1\n") {
		t.Errorf("start on the embedded manager: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, _, _ = cli("manager", "env")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "# its journal: "); ok {
			line = rest
		}
	}
	if !strings.HasPrefix(line, "journalctl ") {
		t.Fatalf("manager env printed no journalctl line: %q", out)
	}
	b, err := exec.Command("/bin/sh", "-c", line+" --no-pager -o cat -u emb-output.service").CombinedOutput()
	if err != nil || string(b) != "out 1\nerr 1\nbad 1\ntail 1\n" {
		// journald 252 ties a stream's lines to their unit only if it
		// reads them while their writer lives: under load it may read
		// a short run's lines after its exit (as the second half of
		// this test forces), and no query by unit finds them. That is
		// journald's race, not the journalctl line's: told apart by
		// the lines being in the journal without their unit.
		all, _ := exec.Command("/bin/sh", "-c", line+" --no-pager -o cat").CombinedOutput()
		if err == nil && string(b) == "" && strings.Contains(string(all), "out 1\nerr 1\nbad 1\ntail 1\n") {
			t.Logf("%s -u: journald read the unit's lines after its process had exited and tied them to no unit (journald 252's race; start showed them all): the query by unit is not checked", line)
		} else {
			t.Errorf("%s: %v, printed %q; want the unit's four lines", line, err, b)
		}
	}

	// journald reads a run's stream only after the manager has reaped
	// its process, as it can on a busy host: here the run's first command
	// stops journald and its last lets it go on once the run is over.
	// journald then knows no unit of the lines, and start still shows them.
	pid, err := os.ReadFile(filepath.Join(dir, "journald.pid"))
	if err != nil {
		t.Fatal(err)
	}
	jpid := strings.TrimSpace(string(pid))
	// The lines of the main process's children (/bin/echo) carry their
	// writer's _PID, not the main process's: they are found by their
	// stream, that of the main process's own lines or of the run's lines
	// journald gave to the unit; where there are none (emb-late-child),
	// nothing ties a stream to the run, and none is copied rather than
	// another unit's lines. The last run stops
	// journald itself once its first child's line (which lives on for a
	// second) is read.
	stop := "/bin/kill -STOP " + jpid
	for _, late := range []struct{ unit, pre, cmd, want string }{
		{"emb-late.service", stop, "echo late out; echo late err >&2", "late out\nlate err\n"},
		{"emb-late-mixed.service", stop, "echo main out; /bin/echo child out; /bin/echo child err >&2; echo main end", "main out\nchild out\nchild err\nmain end\n"},
		{"emb-late-child.service", stop, "/bin/echo child out; /bin/echo child err >&2; true", ""},
		{"emb-late-half.service", "/bin/true", "(echo child one; sleep 1); " + stop + "; /bin/echo child two; true", "child one\nchild two\n"},
	} {
		text = "[Service]\nType=oneshot\nExecStartPre=" + late.pre +
			"\nExecStart=/bin/sh -c '" + late.cmd + "'" +
			"\nExecStopPost=/bin/sh -c 'sleep 0.5; kill -CONT " + jpid + "'\n"
		if err := os.WriteFile(filepath.Join(units, late.unit), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		c.Reload(ctx)
		out, errs, code = cli("start", late.unit)
		syscall.Kill(atoi(jpid), syscall.SIGCONT) // whatever happened
		if code != 0 || out != late.want {
			t.Errorf("start of a run whose lines journald read after the run (%s): exit %d, stdout %q, stderr %q; want %q", late.cmd, code, out, errs, late.want)
		}
	}
	if t.Failed() {
		logEmbedded(t, e)
	}
}

// logEmbedded logs what says why an embedded manager's unit lost its
// output: the manager's and its journald's logs, and every entry of its
// journal with the fields that tie a line to its unit (a line journald
// read after its writer was gone has no _SYSTEMD_UNIT).
func logEmbedded(t *testing.T, e *manager.Embedded) {
	for _, name := range []string{"manager.log", "journald.log"} {
		b, err := os.ReadFile(filepath.Join(e.Dir, name))
		t.Logf("%s (%v):\n%s", name, err, b)
	}
	b, err := exec.Command("journalctl", "--directory="+e.JournalDir(), "--no-pager", "-o", "json",
		"--output-fields=MESSAGE,_PID,_SYSTEMD_UNIT,_SYSTEMD_INVOCATION_ID,_STREAM_ID").CombinedOutput()
	t.Logf("the journal (%v):\n%s", err, b)
}

// startService starts a service without waiting and returns once its
// first run has begun.
func startService(t *testing.T, name string) {
	t.Helper()
	if _, err := systemdtest.Conn(t).StartUnit(context.Background(), name, "replace"); err != nil {
		t.Fatal(err)
	}
}

// waitCLI starts "unitrun wait" with args and returns once it has shown
// first, the first line of the unit's output (it is then attached): on
// stdout, or with --json on stderr. Its end returns its exit status and
// the rest of its stdout and stderr.
func waitCLI(t *testing.T, first string, args ...string) (cmd *exec.Cmd, end func() (int, string, string)) {
	t.Helper()
	return attachCLI(t, first, append([]string{"wait"}, args...)...)
}

// attachCLI is waitCLI for the unitrun command line args ("wait ...",
// "start ..."). If the first line does not come within 20 seconds, it
// says so (the test fails) and returns all the same: the command then
// gets the signal a test sends, as it would once attached, and end
// returns whatever it printed.
func attachCLI(t *testing.T, first string, args ...string) (cmd *exec.Cmd, end func() (int, string, string)) {
	t.Helper()
	cmd = exec.Command(systemdtest.Binary(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A test that goes wrong ends rather than hangs.
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	t.Cleanup(func() { timer.Stop(); cmd.Process.Kill() })
	outs, errs := bufio.NewReader(stdout), bufio.NewReader(stderr)
	lines := outs
	if slices.Contains(args, "--json") {
		lines = errs
	}
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() { l, err := lines.ReadString('\n'); got <- line{l, err} }()
	late := false // the first read goes on: end waits for it
	select {
	case l := <-got:
		if l.s != first {
			cmd.Process.Kill()
			rest, _ := io.ReadAll(errs)
			t.Fatalf("unitrun %s: first line %q (%v), want %q (stderr %q)", args[0], l.s, l.err, first, rest)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("unitrun %s: no first line %q after 20s", strings.Join(args, " "), first)
		late = true
	}
	return cmd, func() (int, string, string) {
		t.Helper()
		read := func(r *bufio.Reader) []byte {
			var head string
			if late && r == lines {
				head = (<-got).s
			}
			b, _ := io.ReadAll(r)
			return append([]byte(head), b...)
		}
		errb := make(chan []byte)
		go func() { errb <- read(errs) }()
		o := read(outs)
		e := <-errb
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(o), string(e)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(o), string(e)
	}
}

// gated is a service's command that prints "started" and exits $2 once the
// file $1 exists.
const gated = `echo started; while [ ! -e "$1" ]; do sleep 0.05; done; exit $2`

// TestWaitExitStatus waits for a running service that exits 3: wait exits
// 3 with run's summary line and shows the run's output from its start.
func TestWaitExitStatus(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	writeService(t, "unitrun-test-wait.service", "[Service]\nExecStart=/bin/sh -c '"+gated+"' sh "+gate+" 3\n")
	startService(t, "unitrun-test-wait.service")
	_, end := waitCLI(t, "started\n", "unitrun-test-wait.service")
	os.WriteFile(gate, nil, 0o644)
	if code, out, errs := end(); code != 3 || out != "" || !strings.HasPrefix(errs, "unitrun: unitrun-test-wait.service finished: exit status 3, result exit-code") {
		t.Errorf("exit %d, more stdout %q, stderr %q; want 3 and run's summary line", code, out, errs)
	}
	// With --json, the result object of run, and the output on stderr.
	os.Remove(gate)
	startService(t, "unitrun-test-wait.service")
	_, end = waitCLI(t, "started\n", "--json", "unitrun-test-wait.service")
	os.WriteFile(gate, nil, 0o644)
	code, out, _ := end()
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 3 || r.ExitCode == nil || *r.ExitCode != 3 || r.Result != "exit-code" || r.JobResult != "done" || r.InvocationID == "" {
		t.Errorf("wait --json: exit %d, stdout %q (%v); want 3 and run's result object", code, out, err)
	}
}

// TestWaitThroughRestart waits across a Restart=on-failure restart: the
// first run exits 3 and is restarted, the second exits 7, which
// RestartPreventExitStatus= keeps from a restart: wait exits 7.
func TestWaitThroughRestart(t *testing.T) {
	tmp := t.TempDir()
	gate, second := filepath.Join(tmp, "go"), filepath.Join(tmp, "second")
	script := `echo run; if [ -e "$2" ]; then exit 7; fi; touch "$2"; while [ ! -e "$1" ]; do sleep 0.05; done; exit 3`
	writeService(t, "unitrun-test-restart.service", "[Service]\nExecStart=/bin/sh -c '"+script+"' sh "+gate+" "+second+
		"\nRestart=on-failure\nRestartSec=100ms\nRestartPreventExitStatus=7\n")
	startService(t, "unitrun-test-restart.service")
	_, end := waitCLI(t, "run\n", "unitrun-test-restart.service")
	os.WriteFile(gate, nil, 0o644)
	if code, out, errs := end(); code != 7 || out != "run\n" || !strings.Contains(errs, "finished: exit status 7, result exit-code") {
		t.Errorf("exit %d, more stdout %q, stderr %q; want 7 from the run after the restart, and its line", code, out, errs)
	}
}

// TestWaitNotRunning: a service that is not running is not waited for:
// wait says so and exits 0; with --json it prints the result object with
// the reason.
func TestWaitNotRunning(t *testing.T) {
	writeService(t, "unitrun-test-idle.service", "[Service]\nType=oneshot\nExecStart=/bin/true\n")
	out, errs, code := unitrun(t, "wait", "unitrun-test-idle.service")
	if code != 0 || out != "" || !strings.Contains(errs, "unitrun-test-idle.service is inactive (dead): not running; nothing to wait for") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and a message", code, out, errs)
	}
	// Without its suffix, as systemctl takes it.
	out, _, code = unitrun(t, "wait", "--json", "unitrun-test-idle")
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Unit != "unitrun-test-idle.service" || !strings.Contains(r.Error, "not running") {
		t.Errorf("--json: exit %d, stdout %q (%v)", code, out, err)
	}
	// A unit that ended and was collected (as every run --no-wait unit is)
	// is not loaded: it has no run in progress either, and its outcome is
	// gone.
	if out, errs, code := unitrun(t, "run", "--no-wait", "-u", "unitrun-test-collected", "--", "true"); code != 0 {
		t.Fatalf("run --no-wait: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	waitGone(t, "unitrun-test-collected.service")
	out, errs, code = unitrun(t, "wait", "unitrun-test-collected.service")
	if want := "unitrun: no unit named unitrun-test-collected.service is loaded (it never ran, or its last run ended and was collected, its outcome gone): not running; nothing to wait for\n"; code != 0 || out != "" || errs != want {
		t.Errorf("wait of a collected unit: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errs, want)
	}
	for _, name := range []string{"unitrun-test.target", "bad/name.service", "unitrun-test@.service"} {
		if _, errs, code := unitrun(t, "wait", name); code != 2 || !strings.Contains(errs, name) {
			t.Errorf("wait %s: exit %d, stderr %q; want 2 and an error naming it", name, code, errs)
		}
	}
}

// TestWaitInterrupted: SIGINT (or the SIGHUP of a terminal that closed)
// ends the wait, not the unit: wait exits 128+N (130 for SIGINT), as an
// interrupted run does, and the service goes on running.
func TestWaitInterrupted(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	writeService(t, "unitrun-test-waitint.service", "[Service]\nExecStart=/bin/sh -c '"+gated+"' sh "+gate+" 0\n")
	startService(t, "unitrun-test-waitint.service")
	for sig, name := range map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP"} {
		cmd, end := waitCLI(t, "started\n", "unitrun-test-waitint.service")
		cmd.Process.Signal(sig)
		if code, _, errs := end(); code != 128+int(sig) || !strings.Contains(errs, "stopped waiting for unitrun-test-waitint.service, which goes on: interrupted by "+name) {
			t.Errorf("%s: exit %d, stderr %q; want %d and a message", name, code, errs, 128+int(sig))
		}
		p, err := systemdtest.Conn(t).Properties(context.Background(), "unitrun-test-waitint.service", manager.UnitIface)
		if err != nil || p["ActiveState"].Value() != "active" {
			t.Errorf("after the wait interrupted by %s the service is %v (%v); want it active still", name, p["ActiveState"], err)
		}
	}
	// With --json, the object that an interrupted run or start prints:
	// the unit, exit_code 128+N and signal, as docs/cli.md has it (it
	// printed the error alone).
	cmd, end := waitCLI(t, "started\n", "--json", "unitrun-test-waitint.service")
	cmd.Process.Signal(syscall.SIGTERM)
	code, out, errs := end()
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 143 || r.Unit != "unitrun-test-waitint.service" || r.ExitCode == nil || *r.ExitCode != 143 || r.Signal != "TERM" ||
		r.Error != "stopped waiting for unitrun-test-waitint.service, which goes on: interrupted by SIGTERM" {
		t.Errorf("wait --json, SIGTERM: exit %d, stdout %q (%v), stderr %q; want 143 and unit, exit_code, signal and error", code, out, err, errs)
	}
}

// TestStartRunningUnit starts a service that another start is running, as
// systemctl start would: the start joins that run. It shows the run's
// lines from its first, as wait does; interrupted, it leaves the run
// going on, which it did not start, and exits 130 saying so (before, it
// showed no line and stopped the unit); with --json the object tells the
// interrupt. A later start that joins the run exits with its status.
func TestStartRunningUnit(t *testing.T) {
	const name = "unitrun-test-startjoin.service"
	gate := filepath.Join(t.TempDir(), "go")
	writeService(t, name, "[Service]\nExecStart=/bin/sh -c 'echo started; while [ ! -e \"$1\" ]; do sleep 0.05; done; echo ending; exit 2' sh "+gate+"\n")
	startService(t, name)
	// Active, its run in progress: not a start job still pending, which
	// a start would share.
	systemdtest.WaitActiveState(t, systemdtest.Conn(t), name, "active")
	active := func(when string) {
		t.Helper()
		p, err := systemdtest.Conn(t).Properties(context.Background(), name, manager.UnitIface)
		if err != nil || p["ActiveState"].Value() != "active" {
			t.Fatalf("%s the service is %v (%v); want it active still", when, p["ActiveState"], err)
		}
	}
	cmd, end := attachCLI(t, "started\n", "start", name)
	cmd.Process.Signal(syscall.SIGINT)
	if code, out, errs := end(); code != 130 || out != "" || errs != "unitrun: stopped waiting for "+name+", which goes on: interrupted by SIGINT\n" {
		t.Errorf("SIGINT: exit %d, more stdout %q, stderr %q; want 130 and that the run goes on", code, out, errs)
	}
	active("after start was interrupted,")
	cmd, end = attachCLI(t, "started\n", "start", "--json", name)
	cmd.Process.Signal(syscall.SIGTERM)
	code, out, _ := end()
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 143 || r.Unit != name || r.ExitCode == nil || *r.ExitCode != 143 || r.Signal != "TERM" ||
		r.Error != "stopped waiting for "+name+", which goes on: interrupted by SIGTERM" {
		t.Errorf("start --json, SIGTERM: exit %d, stdout %q (%v); want 143 and unit, exit_code, signal and error", code, out, err)
	}
	active("after start --json was interrupted,")
	_, end = attachCLI(t, "started\n", "start", name)
	os.WriteFile(gate, nil, 0o644)
	if code, out, errs := end(); code != 2 || out != "ending\n" || !strings.Contains(errs, name+" finished: exit status 2") {
		t.Errorf("start of the running unit: exit %d, more stdout %q, stderr %q; want 2, ending, and the summary line", code, out, errs)
	}

	// A oneshot is activating through its run, its start job pending,
	// which a start shares: interrupted, it leaves that run too.
	const oneshot = "unitrun-test-startjoin1.service"
	gate1 := filepath.Join(t.TempDir(), "go")
	writeService(t, oneshot, "[Service]\nType=oneshot\nExecStart=/bin/sh -c '"+gated+"' sh "+gate1+" 0\n")
	startService(t, oneshot)
	systemdtest.WaitActiveState(t, systemdtest.Conn(t), oneshot, "activating")
	cmd, end = attachCLI(t, "started\n", "start", oneshot)
	cmd.Process.Signal(syscall.SIGINT)
	if code, _, errs := end(); code != 130 || errs != "unitrun: stopped waiting for "+oneshot+", which goes on: interrupted by SIGINT\n" {
		t.Errorf("oneshot, SIGINT: exit %d, stderr %q; want 130 and that the run goes on", code, errs)
	}
	if p, err := systemdtest.Conn(t).Properties(context.Background(), oneshot, manager.UnitIface); err != nil || p["ActiveState"].Value() != "activating" {
		t.Errorf("after start of the activating oneshot was interrupted, it is %v (%v); want it activating still", p["ActiveState"], err)
	}
	os.WriteFile(gate1, nil, 0o644)
	systemdtest.WaitActiveState(t, systemdtest.Conn(t), oneshot, "inactive")
}

// TestStartOutputAfterManagerEnv reaches the embedded manager as a user
// does after eval "$(unitrun manager env)": as the user manager, through
// $XDG_RUNTIME_DIR. start still shows the unit's output, read from the
// embedded manager's own journal.
func TestStartOutputAfterManagerEnv(t *testing.T) {
	writeService(t, "unitrun-test-userenv.service", "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo from-the-unit; exit 4'\n")
	out, errs, code := unitrun(t, "--manager", "user", "start", "unitrun-test-userenv.service")
	if code != 4 || out != "from-the-unit\n" {
		t.Errorf("exit %d, stdout %q; want 4 and the unit's line (stderr %q)", code, out, errs)
	}
}

// TestStartShowsEveryLine starts a oneshot that prints many lines and
// exits at once: start shows every one of them, though journald stores
// the last ones after the unit has ended.
func TestStartShowsEveryLine(t *testing.T) {
	writeService(t, "unitrun-test-lines.service", "[Service]\nType=oneshot\nExecStart=/usr/bin/seq 20000\n")
	out, errs, code := unitrun(t, "start", "unitrun-test-lines.service")
	want, _ := exec.Command("seq", "20000").Output()
	if code != 0 || out != string(want) {
		t.Errorf("exit %d, %d bytes of stdout, want 0 and the %d bytes of seq 20000 (stderr %q)", code, len(out), len(want), errs)
	}
}

// TestStartMakesNoRun starts a oneshot twice: the second start makes no
// run (its condition is no longer met), and start says so and exits 0, as
// systemctl start does, instead of reporting the first run's exit 5.
func TestStartMakesNoRun(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	writeService(t, "unitrun-test-norun.service", "[Unit]\nConditionPathExists=!"+gate+"\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo ran; exit 5'\n")
	defer systemdtest.Conn(t).ResetFailedUnit(context.Background(), "unitrun-test-norun.service")
	if out, _, code := unitrun(t, "start", "unitrun-test-norun.service"); code != 5 || out != "ran\n" {
		t.Fatalf("first start: exit %d, stdout %q; want 5 and ran", code, out)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := unitrun(t, "start", "unitrun-test-norun.service")
	if code != 0 || out != "" || errs != "unitrun: unitrun-test-norun.service: start job done; no run to wait for\n" {
		t.Errorf("second start: exit %d, stdout %q, stderr %q; want 0 and no run", code, out, errs)
	}
}

// TestStartActiveMakesNoRun starts a RemainAfterExit=yes oneshot twice:
// the second start finds it active, its run ended, and makes no run.
// start says so and exits 0, and --json holds no run (no invocation ID,
// exit_code null), where both reported the first run as this start's.
func TestStartActiveMakesNoRun(t *testing.T) {
	const name = "unitrun-test-kept.service"
	writeService(t, name, "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/echo ran\n")
	if out, errs, code := unitrun(t, "start", name); code != 0 || out != "ran\n" {
		t.Fatalf("first start: exit %d, stdout %q, stderr %q; want 0 and ran", code, out, errs)
	}
	out, errs, code := unitrun(t, "start", name)
	if code != 0 || out != "" || errs != "unitrun: "+name+": start job done; no run to wait for\n" {
		t.Errorf("second start: exit %d, stdout %q, stderr %q; want 0 and no run", code, out, errs)
	}
	out, _, code = unitrun(t, "start", "--json", name)
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.InvocationID != "" || r.ExitCode != nil || r.StartedAt != nil || r.JobResult != "done" {
		t.Errorf("second start --json: exit %d, stdout %q (%v); want 0, job_result done and no run", code, out, err)
	}
}

// TestStartThroughRestarts: start waits for a service through the
// restarts its Restart= makes, as run and wait do, and exits with the
// last run's status, whose output it shows. (A run before the last that
// ends before journald reads its stream leaves its lines with no unit,
// and only the last run's are looked for there.)
func TestStartThroughRestarts(t *testing.T) {
	counter := filepath.Join(t.TempDir(), "n")
	writeService(t, "unitrun-test-startrestart.service", "[Service]\nExecStart=/bin/sh -c '"+strings.ReplaceAll(counted, "$", "$$")+"' sh "+counter+
		"\nRestart=on-failure\nRestartSec=50ms\n")
	out, errs, code := unitrun(t, "start", "unitrun-test-startrestart")
	if code != 0 || !strings.HasSuffix(out, "run 3\n") || !strings.Contains(errs, "after 2 restarts") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 after the third run, and its output", code, out, errs)
	}
}

// The last run of a unit file's service that restarts, then succeeds, is
// reported with its exit: once it ends the unit is inactive, and systemd
// collects a unit file's unit that nothing keeps at once, its outcome
// with it. Before, start did not keep it as wait does, and under a quick
// end said, one time in three to ten, "no process ran" (exit_code null,
// no finished_at).
func TestStartThroughRestartsTellsLastExit(t *testing.T) {
	dir := t.TempDir()
	name := "unitrun-test-startrestartexit.service"
	writeService(t, name, "[Service]\nExecStart=/bin/sh -c '"+strings.ReplaceAll(counted, "$", "$$")+"' sh "+filepath.Join(dir, "n")+
		"\nRestart=on-failure\nRestartSec=50ms\n")
	for i := range 15 {
		os.Remove(filepath.Join(dir, "n"))
		out, errs, code := unitrun(t, "start", "-q", "--json", name)
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("start %d: stdout %q: %v (stderr %q)", i, out, err, errs)
		}
		if code != 0 || r.ExitCode == nil || *r.ExitCode != 0 || r.FinishedAt == nil || r.Restarts != 2 {
			t.Fatalf("start %d: exit %d, %s; want 0, exit_code 0, finished_at and 2 restarts", i, code, out)
		}
	}
}
