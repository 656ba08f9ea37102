package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// TestOpStatusCancelPrintRecord: "op status" and "op cancel" print the
// record on stdout, one field a line, "-" for an empty one when piped,
// and the object with --json.
func TestOpStatusCancelPrintRecord(t *testing.T) {
	t.Setenv("UNITRUN_SOCKET", startDaemon(t))
	id, _, code := unitrun(t, "op", "call", "--no-wait", "sh", "echo started; sleep 30")
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("op call --no-wait: %q, exit %d", id, code)
	}
	for out, _, _ := unitrun(t, "op", "logs", id); out != "started\n"; out, _, _ = unitrun(t, "op", "logs", id) {
		time.Sleep(20 * time.Millisecond)
	}
	out, errs, code := unitrun(t, "op", "status", id)
	fields := recordFields(t, out)
	if code != 0 || errs != "" || fields["id"] != id || fields["op"] != "sh" || fields["state"] != "running" ||
		fields["exit_code"] != "-" || fields["finished_at"] != "-" || fields["args"] != "echo started; sleep 30" {
		t.Errorf("op status: stdout %q, stderr %q, exit %d; want the running record on stdout", out, errs, code)
	}
	out, _, code = unitrun(t, "op", "status", "--json", id)
	var rec api.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil || code != 0 || rec.ID != id || rec.State != api.StateRunning {
		t.Errorf("op status --json: %q (%v), exit %d", out, err, code)
	}
	out, errs, code = unitrun(t, "op", "cancel", id)
	fields = recordFields(t, out)
	if code != 0 || errs != "" || fields["id"] != id || fields["state"] != "canceled" || fields["signal"] != "TERM" || fields["finished_at"] == "-" {
		t.Errorf("op cancel: stdout %q, stderr %q, exit %d; want the canceled record on stdout", out, errs, code)
	}
	out, _, code = unitrun(t, "op", "cancel", "--json", id)
	if err := json.Unmarshal([]byte(out), &rec); err != nil || code != 0 || rec.State != api.StateCanceled {
		t.Errorf("op cancel --json of a canceled job: %q (%v), exit %d", out, err, code)
	}
	// A piped listing prints "-" for an empty cell: the exec op has no unit.
	if out, _, code := unitrun(t, "op", "list"); code != 0 || !strings.Contains(out, "sh\ttrue\t1-1\tfalse\t-\n") {
		t.Errorf("op list piped: %q, exit %d; want - in the empty unit column", out, code)
	}
}

// recordFields parses "name\tvalue" lines; each line must have exactly
// one tab.
func recordFields(t *testing.T, out string) map[string]string {
	t.Helper()
	fields := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if !ok || strings.Contains(v, "\t") {
			t.Errorf("record line %q is not name<TAB>value", line)
			continue
		}
		fields[k] = v
	}
	return fields
}

// TestOpCallDashDash: "op call NAME -- ARGS" passes ARGS, not "--".
func TestOpCallDashDash(t *testing.T) {
	t.Setenv("UNITRUN_SOCKET", startDaemon(t))
	out, errs, code := unitrun(t, "op", "call", "-q", "sh", "--", "echo ran")
	if code != 0 || out != "ran\n" {
		t.Errorf("op call sh -- SCRIPT: stdout %q, stderr %q, exit %d; want the script run alone", out, errs, code)
	}
}

// TestOpCallInterrupt sends SIGINT to "op call" while its job runs: the
// job goes on and the message names it; with --cancel-on-interrupt, or
// for an op with on_disconnect "stop", the job is canceled, its record
// saying that a caller canceled it (for the "stop" op it said that its
// caller disconnected: the interrupt closed the call's connection before
// op call canceled the job); unitrun exits 130 in every case, as run does
// when Ctrl-C stops its unit.
func TestOpCallInterrupt(t *testing.T) {
	sock := systemdtest.StartDaemon(t, `
[[op]]
name = "sh"
exec = ["/bin/sh", "-c"]
args = { min = 1, max = 1 }

[[op]]
name = "sh-stop"
exec = ["/bin/sh", "-c"]
args = { min = 1, max = 1 }
on_disconnect = "stop"
`).API
	t.Setenv("UNITRUN_SOCKET", sock)
	idRE := regexp.MustCompile(`job (\S+) \(op `)
	for _, tc := range []struct {
		args      []string
		wantCode  int
		wantErr   string
		wantState api.State
	}{
		{[]string{"sh"}, 128 + int(syscall.SIGINT), "goes on; follow it with \"unitrun op wait ID\" or stop it with \"unitrun op cancel ID\"\n", api.StateRunning},
		{[]string{"--cancel-on-interrupt", "sh"}, 128 + int(syscall.SIGINT), "canceled\n", api.StateCanceled},
		{[]string{"sh-stop"}, 128 + int(syscall.SIGINT), "canceled\n", api.StateCanceled},
	} {
		cmd := exec.Command(systemdtest.Binary(t), append(append([]string{"op", "call"}, tc.args...), "echo started; sleep 30")...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if line != "started\n" {
			cmd.Process.Kill()
			t.Fatalf("op call %v: first output %q (%v)", tc.args, line, err)
		}
		cmd.Process.Signal(syscall.SIGINT)
		err = cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		errs := errb.String()
		m := idRE.FindStringSubmatch(errs)
		if m == nil {
			t.Fatalf("op call %v: stderr %q names no job", tc.args, errs)
		}
		id := m[1]
		// The last line says what became of the job, once.
		want := strings.ReplaceAll(fmt.Sprintf("\nunitrun: interrupted by SIGINT: job %s (op %s) %s", id, tc.args[len(tc.args)-1], tc.wantErr), "ID", id)
		if code != tc.wantCode || !strings.HasSuffix(errs, want) {
			t.Errorf("op call %v after SIGINT: exit %d (%v), stderr %q; want exit %d and stderr ending in %q", tc.args, code, err, errs, tc.wantCode, want)
		}
		if tc.wantState == api.StateRunning && !strings.Contains(errs, "unitrun op cancel "+id) {
			t.Errorf("op call %v after SIGINT: stderr %q does not tell how to cancel the job", tc.args, errs)
		}
		out, _, _ := unitrun(t, "op", "status", "--json", id)
		var rec api.Record
		if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.State != tc.wantState {
			t.Errorf("op call %v: after SIGINT the job is %q (%v), want %s", tc.args, rec.State, err, tc.wantState)
		}
		if tc.wantState == api.StateCanceled && !strings.HasPrefix(rec.Message, "canceled by a caller: ") {
			t.Errorf("op call %v: after SIGINT the job's message is %q, want it canceled by a caller", tc.args, rec.Message)
		}
		unitrun(t, "op", "cancel", id)
	}
}

// TestOpCallInterruptWhileDaemonRestarts sends SIGINT to "op call" while
// its daemon is stopped, between two daemons: for an op with
// on_disconnect "stop", and with --cancel-on-interrupt, op call cancels
// the job once the next daemon answers and exits 130. It gave up at once:
// for the "stop" op it said that the job goes on, and with
// --cancel-on-interrupt it exited 125; the job ran on either way.
func TestOpCallInterruptWhileDaemonRestarts(t *testing.T) {
	d, _ := startGatedDaemon(t)
	c := client.New(d.API)
	for _, args := range [][]string{{"gated"}, {"--cancel-on-interrupt", "gated"}} {
		before, err := c.Jobs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cli := exec.Command(systemdtest.Binary(t), append([]string{"op", "call", "--socket", d.API}, args...)...)
		var errb bytes.Buffer
		cli.Stderr = &errb
		if err := cli.Start(); err != nil {
			t.Fatal(err)
		}
		defer cli.Process.Kill()
		id := runningJob(t, c, before)
		d.Cmd.Process.Signal(syscall.SIGTERM)
		if err := d.Cmd.Wait(); err != nil {
			t.Fatalf("daemon after SIGTERM: %v", err)
		}
		cli.Process.Signal(syscall.SIGINT)
		time.Sleep(500 * time.Millisecond) // op call tries the daemon that is not there
		d.Start(t)
		cli.Wait()
		want := fmt.Sprintf("\nunitrun: interrupted by SIGINT: job %s (op gated) canceled\n", id)
		if code := cli.ProcessState.ExitCode(); code != 130 || !strings.HasSuffix(errb.String(), want) {
			t.Errorf("op call %v interrupted while no daemon ran: exit %d, stderr %q; want exit 130 and stderr ending in %q", args, code, errb.String(), want)
		}
		rec, err := c.Job(context.Background(), id)
		if err != nil || rec.State != api.StateCanceled || !strings.HasPrefix(rec.Message, "canceled by a caller: ") {
			t.Errorf("op call %v interrupted while no daemon ran: job %+v, %v; want it canceled by a caller", args, rec, err)
		}
	}
}

// TestOpLogsInterrupt: a signal that cuts "op logs -f" short is no failure
// of unitrun: it exits 128+N and says so, and the job goes on.
func TestOpLogsInterrupt(t *testing.T) {
	t.Setenv("UNITRUN_SOCKET", startDaemon(t))
	id, _, code := unitrun(t, "op", "call", "--no-wait", "sh", "echo started; sleep 30")
	id = strings.TrimSpace(id)
	if code != 0 || id == "" {
		t.Fatalf("op call --no-wait: %q, exit %d", id, code)
	}
	defer unitrun(t, "op", "cancel", id)
	cmd := exec.Command(systemdtest.Binary(t), "op", "logs", "-f", id)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
		cmd.Process.Kill()
		t.Fatalf("op logs -f: first output %q (%v)", line, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGINT) || errb.String() != "unitrun: interrupted by SIGINT\n" {
		t.Errorf("op logs -f after SIGINT: exit %d, stderr %q; want 130 and the signal named", code, errb.String())
	}
	if out, _, _ := unitrun(t, "op", "status", id); !strings.Contains(out, "state\trunning\n") {
		t.Errorf("the job after op logs -f was interrupted: %q, want running", out)
	}
}

// TestOpRunningRecord: the record of a running job holds the invocation
// ID of its run and counts it (attempts 1) as soon as systemd announces
// the run, for an exec op, a retried exec op and a unit op alike, and
// "op status" shows them.
func TestOpRunningRecord(t *testing.T) {
	ctx := context.Background()
	conn := systemdtest.Conn(t)
	svc := unit.RandomName("unitrun-test-running-", "service")
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), svc), "[Service]\nExecStart=/bin/sleep 60\n")
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	t.Setenv("UNITRUN_SOCKET", systemdtest.StartDaemon(t, `
[[op]]
name = "sleep"
exec = ["/bin/sleep", "60"]

[[op]]
name = "sleep-retry"
exec = ["/bin/sleep", "60"]
retry = { attempts = 2 }

[[op]]
name = "unit"
unit = "`+svc+`"
`).API)
	for _, op := range []string{"sleep", "sleep-retry", "unit"} {
		out, errs, code := unitrun(t, "op", "call", "--no-wait", op)
		id := strings.TrimSpace(out)
		if code != 0 || id == "" {
			t.Fatalf("op call --no-wait %s: %q %q, exit %d", op, out, errs, code)
		}
		t.Cleanup(func() { unitrun(t, "op", "cancel", id) })
		var rec api.Record
		for deadline := time.Now().Add(30 * time.Second); rec.InvocationID == ""; time.Sleep(20 * time.Millisecond) {
			out, _, _ := unitrun(t, "op", "status", "--json", id)
			rec = api.Record{}
			decode(t, "op status --json", out, &rec)
			if rec.State != api.StateRunning && rec.State != api.StateQueued {
				t.Fatalf("op %s: job %s is %s before its invocation ID was recorded: %+v", op, id, rec.State, rec)
			}
			if time.Now().After(deadline) {
				t.Fatalf("op %s: job %s running for 30s with no invocation ID: %+v", op, id, rec)
			}
		}
		props, err := conn.Properties(ctx, rec.Unit, manager.UnitIface)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := props["InvocationID"].Value().([]byte)
		if rec.InvocationID != hex.EncodeToString(want) || rec.Attempts != 1 || rec.State != api.StateRunning {
			t.Errorf("op %s: running job's record: invocation_id %q, attempts %d, state %s; want %x, 1, running", op, rec.InvocationID, rec.Attempts, rec.State, want)
		}
		out, _, _ = unitrun(t, "op", "status", id)
		if !strings.Contains(out, "invocation_id\t"+rec.InvocationID+"\n") || !strings.Contains(out, "attempts\t1\n") {
			t.Errorf("op %s: op status of the running job:\n%s\nwant its invocation_id and attempts 1", op, out)
		}
	}
}

// TestOpWaitNoDaemon: "op wait" and "op logs -f" on a socket where no
// daemon listens go on trying, as they do across a restart, but say so
// once on stderr, naming the socket, after client.NotReachedAfter; Ctrl-C
// then exits 130. They waited without a word.
func TestOpWaitNoDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	const id = "20261202T142501Z-0123abcd"
	notice := "unitrun: no daemon answers at " + sock + " yet; waiting for it (Ctrl-C to stop)\n"
	for _, args := range [][]string{{"op", "wait", id}, {"op", "logs", "-f", id}} {
		cmd := exec.Command(systemdtest.Binary(t), append(args, "--socket", sock)...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 10)
		go func() {
			defer close(lines)
			r := bufio.NewReader(stderr)
			for {
				line, err := r.ReadString('\n')
				if line != "" {
					lines <- line
				}
				if err != nil {
					return
				}
			}
		}()
		select {
		case line := <-lines:
			if took := time.Since(start); line != notice || took < client.NotReachedAfter {
				t.Errorf("%q: stderr %q after %v; want %q after %v or more", args, line, took, notice, client.NotReachedAfter)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%q: nothing on stderr after 5 s without a daemon; want %q", args, notice)
		}
		time.Sleep(2 * time.Second) // more tries fail: the notice is not repeated
		cmd.Process.Signal(syscall.SIGINT)
		var rest []string
		for line := range lines {
			rest = append(rest, line)
		}
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 130 || !slices.Equal(rest, []string{"unitrun: interrupted by SIGINT\n"}) {
			t.Errorf("%q after SIGINT: exit %d, stderr then %q; want 130 and the signal named, once", args, code, rest)
		}
	}
}
