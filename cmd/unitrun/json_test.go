package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// decode parses out, the stdout of a command run with --json, into v.
func decode(t *testing.T, what, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%s: stdout %q is not the JSON documented: %v", what, out, err)
	}
}

// Every op command that prints a listing or a record prints it as JSON
// with --json.
func TestOpJSON(t *testing.T) {
	t.Setenv("UNITRUN_SOCKET", startDaemon(t))
	out, _, code := unitrun(t, "op", "list", "--json")
	var ops []api.OpInfo
	decode(t, "op list", out, &ops)
	if code != 0 || len(ops) != 2 || ops[0].Name != "sh" || !ops[0].Allowed || ops[0].ArgsMin != 1 || ops[0].ArgsMax != 1 {
		t.Errorf("op list --json: exit %d, %+v", code, ops)
	}

	out, _, code = unitrun(t, "op", "call", "--json", "--no-wait", "sh", "exec sleep 600")
	var called struct{ ID string }
	decode(t, "op call --no-wait", out, &called)
	if code != 0 || called.ID == "" {
		t.Fatalf("op call --no-wait --json: exit %d, %q", code, out)
	}
	out, _, code = unitrun(t, "op", "status", "--json", called.ID)
	var rec api.Record
	decode(t, "op status", out, &rec)
	if code != 0 || rec.ID != called.ID || rec.Op != "sh" || rec.Args[0] != "exec sleep 600" || rec.Done() {
		t.Errorf("op status --json: exit %d, %+v", code, rec)
	}
	out, _, code = unitrun(t, "op", "jobs", "--json")
	var recs []api.Record
	decode(t, "op jobs", out, &recs)
	if code != 0 || len(recs) != 1 || recs[0].ID != called.ID {
		t.Errorf("op jobs --json: exit %d, %+v", code, recs)
	}
	out, _, code = unitrun(t, "op", "cancel", "--json", called.ID)
	rec = api.Record{}
	decode(t, "op cancel", out, &rec)
	if code != 0 || rec.ID != called.ID || rec.State != api.StateCanceled {
		t.Errorf("op cancel --json: exit %d, %+v", code, rec)
	}
	out, _, code = unitrun(t, "op", "wait", "--json", called.ID)
	rec = api.Record{}
	decode(t, "op wait", out, &rec)
	if code != 128+15 || rec.State != api.StateCanceled || rec.Signal != "TERM" || rec.FinishedAt == nil {
		t.Errorf("op wait --json: exit %d, %+v", code, rec)
	}
	out, errs, code := unitrun(t, "op", "call", "--json", "sh", "echo out; exit 5")
	rec = api.Record{}
	decode(t, "op call", out, &rec)
	if code != 5 || rec.ExitCode == nil || *rec.ExitCode != 5 || rec.State != api.StateFailed || !strings.Contains(errs, "out\n") {
		t.Errorf("op call --json: exit %d, %+v, stderr %q", code, rec, errs)
	}
}

// Every pod command that creates, starts or stops a pod prints its status
// as JSON with --json, in the shape of "pod status --json".
func TestPodJSON(t *testing.T) {
	dir := t.TempDir()
	path := manifestFile(t, "name: jsonpod\napps:\n  - name: a\n    exec: [/bin/sleep, \"600\"]\n")
	out, _, code := podCLI(t, dir, "create", "--json", path)
	rmPod(t, dir, "jsonpod")
	var v podView
	decode(t, "pod create", out, &v)
	if code != 0 || v.Name != "jsonpod" || v.Phase != "Pending" || len(v.Apps) != 1 || v.Apps[0].State != "waiting" {
		t.Errorf("pod create --json: exit %d, %s", code, out)
	}
	out, _, code = podCLI(t, dir, "start", "--json", "jsonpod")
	v = podView{}
	decode(t, "pod start", out, &v)
	if code != 0 || v.Phase != "Running" || v.StartedAt == nil {
		t.Errorf("pod start --json: exit %d, %s", code, out)
	}
	out, _, code = podCLI(t, dir, "list", "--json")
	var vs []podView
	decode(t, "pod list", out, &vs)
	if code != 0 || len(vs) != 1 || vs[0].Name != "jsonpod" || vs[0].Phase != "Running" {
		t.Errorf("pod list --json: exit %d, %s", code, out)
	}
	out, _, code = podCLI(t, dir, "stop", "--json", "jsonpod")
	v = podView{}
	decode(t, "pod stop", out, &v)
	if code != 0 || v.Phase != "Succeeded" || v.ExitCode == nil || *v.ExitCode != 0 || v.Apps[0].ExitCode == nil || *v.Apps[0].ExitCode != 143 {
		t.Errorf("pod stop --json: exit %d, %s", code, out)
	}

	out, _, code = podCLI(t, dir, "run", "--detach", "--json", manifestFile(t, "name: jsondetach\napps:\n  - name: a\n    exec: [/bin/sleep, \"600\"]\n"))
	rmPod(t, dir, "jsondetach")
	v = podView{}
	decode(t, "pod run --detach", out, &v)
	if code != 0 || v.Name != "jsondetach" || v.Phase != "Running" {
		t.Errorf("pod run --detach --json: exit %d, %s", code, out)
	}
}

// manager status prints what it tried and what it chose as JSON.
func TestManagerStatusJSON(t *testing.T) {
	out, _, code := unitrun(t, "manager", "status", "--json")
	var s struct {
		Chosen  string `json:"chosen"`
		Address string `json:"address"`
		Version string `json:"version"`
		Tried   []struct {
			Manager string `json:"manager"`
			Reached bool   `json:"reached"`
		} `json:"tried"`
	}
	decode(t, "manager status", out, &s)
	if code != 0 || !strings.HasPrefix(s.Chosen, "private:") || s.Version == "" || len(s.Tried) == 0 || !s.Tried[len(s.Tried)-1].Reached {
		t.Errorf("manager status --json: exit %d, %s", code, out)
	}
}

// ended is how a process ended as a JSON face writes it: the fields that
// every face has (unit.Exit.JSON, and systemd's result).
type ended struct {
	ExitCode *int   `json:"exit_code"`
	Signal   string `json:"signal"`
	Result   string `json:"result"`
}

func (e ended) String() string {
	code := "null"
	if e.ExitCode != nil {
		code = strconv.Itoa(*e.ExitCode)
	}
	return fmt.Sprintf("exit_code %s, signal %q, result %q", code, e.Signal, e.Result)
}

// The same death reads the same on every face that writes JSON: run
// --json (the job library), op status --json (the daemon's record), the
// daemon's D-Bus Wait record and Finished signal, and pod
// status --json (what the pod's reaper read from $EXIT_CODE, $EXIT_STATUS
// and $SERVICE_RESULT) write the same exit_code, signal and result, as
// docs/cli.md says: exit_code is the shell's status, 128+N for signal N,
// 126 for a file that cannot be executed and 127 for a missing #!
// interpreter, and the exit status of each command is that exit_code.
func TestSameEndOnEveryFace(t *testing.T) {
	dir := t.TempDir()
	badELF := filepath.Join(dir, "badelf")
	noInterp := filepath.Join(dir, "nointerp")
	noExec := filepath.Join(dir, "noexec")  // found by unitrun, not executable: no unit is made
	missing := filepath.Join(dir, "nosuch") // not found by unitrun: no unit is made
	cores := filepath.Join(dir, "cores")    // a core is written in the process's directory
	for path, data := range map[string]string{badELF: "\x7fELFgarbage", noInterp: "#!/nonexistent/interpreter\necho hi\n", noExec: "echo hi\n"} {
		mode := os.FileMode(0o755)
		if path == noExec {
			mode = 0o644
		}
		if err := os.WriteFile(path, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(cores, 0o755); err != nil {
		t.Fatal(err)
	}
	dump := "cd " + cores + "; ulimit -c unlimited; kill -SEGV $$"
	addr := startBus(t)
	d := systemdtest.NewDaemon(t, `
[[op]]
name = "sh"
exec = ["/bin/sh", "-c"]
args = { min = 1, max = 1 }

[[op]]
name = "slow"
exec = ["/bin/sleep", "30"]
timeout = "1s"

[[op]]
name = "badelf"
exec = ["`+badELF+`"]

[[op]]
name = "nointerp"
exec = ["`+noInterp+`"]

[[op]]
name = "noexec"
exec = ["`+noExec+`"]

[[op]]
name = "missing"
exec = ["`+missing+`"]
`)
	d.Flags = []string{"--dbus", addr}
	d.Start(t)
	t.Setenv("UNITRUN_SOCKET", d.API)
	_, ops, signals := opsOnBus(t, addr)
	code := func(n int) *int { return &n }
	for _, c := range []struct {
		name string
		argv []string // the command, for run and in the pod
		op   []string // the op call doing the same
		// runProps are run's -p for the death; "" for the pod face
		// means the pod has no such setting.
		runProps []string
		want     ended
		reason   string // in run's error, the pod app's message and the op's
		// podReason is in the pod app's message where it words the
		// reason its own way ("" for reason).
		podReason string
	}{
		{"kill -9", []string{"/bin/sh", "-c", "kill -9 $$"}, []string{"sh", "kill -9 $$"}, nil, ended{code(137), "KILL", "signal"}, "", ""},
		{"exit 3", []string{"/bin/sh", "-c", "exit 3"}, []string{"sh", "exit 3"}, nil, ended{code(3), "", "exit-code"}, "", ""},
		{"timeout", []string{"/bin/sleep", "30"}, []string{"slow"}, []string{"RuntimeMaxSec=1"}, ended{code(143), "TERM", "timeout"}, "", ""},
		{"core dump", []string{"/bin/sh", "-c", dump}, []string{"sh", dump}, nil, ended{code(139), "SEGV", "core-dump"}, "", ""},
		{"exec format error", []string{badELF}, []string{"badelf"}, nil, ended{code(126), "", "exit-code"}, "exec format error", ""},
		{"missing interpreter", []string{noInterp}, []string{"nointerp"}, nil, ended{code(127), "", "exit-code"}, noInterp + ": interpreter /nonexistent/interpreter: no such file or directory", ""},
		{"not executable", []string{noExec}, []string{"noexec"}, nil, ended{code(126), "", "exit-code"}, "cannot execute: permission denied", "permission denied"},
		{"command not found", []string{missing}, []string{"missing"}, nil, ended{code(127), "", "exit-code"}, "command not found", "not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			faces := map[string]ended{}
			args := []string{"run", "--json"}
			for _, p := range c.runProps {
				args = append(args, "-p", p)
			}
			out, _, exit := unitrun(t, append(append(args, "--"), c.argv...)...)
			var run struct {
				ended
				Error string `json:"error"`
			}
			decode(t, "run", out, &run)
			faces["run --json"] = run.ended
			if exit != *c.want.ExitCode || !strings.Contains(run.Error, c.reason) {
				t.Errorf("run: exit %d, %s; want exit %d and the reason %q", exit, out, *c.want.ExitCode, c.reason)
			}
			if c.reason != "" {
				// Told on stderr even with --quiet, as a command not found is.
				if _, errs, exit := unitrun(t, append([]string{"run", "-q", "--"}, c.argv...)...); exit != *c.want.ExitCode || !strings.Contains(errs, c.reason) {
					t.Errorf("run -q: exit %d, stderr %q; want exit %d and the reason %q", exit, errs, *c.want.ExitCode, c.reason)
				}
			}

			out, _, exit = unitrun(t, append([]string{"op", "call", "--json"}, c.op...)...)
			var rec struct {
				ended
				Message string `json:"message"`
			}
			decode(t, "op call", out, &rec)
			var called struct{ ID string }
			decode(t, "op call", out, &called)
			out, _, _ = unitrun(t, "op", "status", "--json", called.ID)
			decode(t, "op status", out, &rec)
			faces["op status --json"] = rec.ended
			if exit != *c.want.ExitCode || !strings.Contains(rec.Message, c.reason) {
				t.Errorf("op call: exit %d, %s; want exit %d and the reason %q", exit, out, *c.want.ExitCode, c.reason)
			}

			// Over D-Bus: the Finished signal's exit status, and the
			// record Wait returns.
			var id string
			if err := ops.Call(front.DBusIface+".Call", 0, c.op[0], append([]string{}, c.op[1:]...)).Store(&id); err != nil {
				t.Fatal(err)
			}
			if got := finished(t, signals); len(got) != 4 || got[0] != id || got[2] != int32(*c.want.ExitCode) {
				t.Errorf("D-Bus Finished %v; want exit status %d", got, *c.want.ExitCode)
			}
			m := busRecord(t, addr, "Wait", id)
			var onBus ended
			if n, ok := m["exit_code"].(float64); ok {
				onBus.ExitCode = code(int(n))
			}
			onBus.Signal, _ = m["signal"].(string)
			onBus.Result, _ = m["result"].(string)
			faces["D-Bus Wait"] = onBus

			if c.runProps == nil {
				stateDir := t.TempDir()
				exec, _ := json.Marshal(c.argv)
				rmPod(t, stateDir, "faces")
				if _, errs, exit := podCLI(t, stateDir, "run", manifestFile(t, "name: faces\napps:\n  - name: a\n    exec: "+string(exec)+"\n")); exit != *c.want.ExitCode {
					t.Errorf("pod run: exit %d, stderr %q; want %d", exit, errs, *c.want.ExitCode)
				}
				out, _, _ = podCLI(t, stateDir, "status", "--json", "faces")
				var v struct {
					Apps []struct {
						ended
						Message string `json:"message"`
					} `json:"apps"`
				}
				decode(t, "pod status", out, &v)
				if len(v.Apps) != 1 {
					t.Fatalf("pod status --json: %s; want one app", out)
				}
				faces["pod status --json"] = v.Apps[0].ended
				reason := cmp.Or(c.podReason, c.reason)
				if !strings.Contains(v.Apps[0].Message, reason) {
					t.Errorf("pod status --json: %s; want the app's message to say %q", out, reason)
				}
				// The app's log tells a command that could not be
				// executed as run does, where the pod words it so.
				logs, _, _ := podCLI(t, stateDir, "logs", "faces", "a")
				if c.podReason == "" && !strings.Contains(logs, c.reason) {
					t.Errorf("pod logs: %q; want it to say %q, as run does", logs, c.reason)
				}
				// A command that exists but cannot be executed is told
				// as run tells one it finds so, naming it once (it read
				// "/x: cannot execute: command /x: exec format error").
				line := map[string]string{
					"exec format error": badELF + ": cannot execute: exec format error",
					"not executable":    noExec + ": cannot execute: permission denied",
				}[c.name]
				if line != "" && !strings.Contains(logs, "unitrun: "+line+"\n") {
					t.Errorf("pod logs: %q; want the line %q", logs, "unitrun: "+line)
				}
			} else {
				t.Logf("pod status --json not compared: a pod app has no setting for %v", c.runProps)
			}

			for face, got := range faces {
				if got.String() != c.want.String() {
					t.Errorf("%s writes %v; want %v, as every face", face, got, c.want)
				}
			}
		})
	}
}

// run, start and wait print their JSON object on one line whatever ended
// them, a command that was never found or a unit that is not there
// included (docs/cli.md).
func TestRunJSONOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--json", "--", "true"},
		{"run", "--json", "--", "/nonexistent"},
		{"run", "--json", "--", "/etc"},
		{"run", "--json", "--no-wait", "--", "true"},
		{"wait", "--json", "unitrun-test-no-such-unit.service"},
	} {
		out, _, _ := unitrun(t, args...)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "}\n") {
			t.Errorf("%v: stdout %q, want one JSON object on one line (%v)", args, out, err)
		}
	}
}

// TestJSONFailureObject checks that a command given --json that fails
// before it has a value to print (a usage error, a daemon not reached)
// prints {"error"} on stdout, with the message stderr shows, so that
// stdout holds one JSON value whatever happened.
func TestJSONFailureObject(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none.sock")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--json", "--unit", "x.scope", "true"}, exitUsage, `--unit "x.scope": a command runs as a service: give a name ending in .service, or no suffix`},
		{[]string{"run", "--bogus", "--json", "true"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"start", "--json"}, exitUsage, "accepts 1 arg(s), received 0; usage: unitrun start [flags] UNIT"},
		{[]string{"pod", "status", "--json"}, exitUsage, "accepts 1 arg(s), received 0; usage: unitrun pod status NAME [flags]"},
		{[]string{"op", "list", "--json", "--socket", none}, exitFailed, "unitrun daemon at " + none + ": no such file or directory"},
	} {
		out, errs, code := unitrun(t, tc.args...)
		want, _ := json.Marshal(map[string]string{"error": tc.want})
		if code != tc.code || out != string(want)+"\n" || errs != "unitrun: "+tc.want+"\n" {
			t.Errorf("unitrun %q: exit %d, stdout %q, stderr %q; want exit %d, stdout %s and the same message on stderr", tc.args, code, out, errs, tc.code, want)
		}
	}
}
