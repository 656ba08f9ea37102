package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/api"
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

// The same death, a command killed by SIGKILL, reads the same on every
// face that writes JSON: run --json, op status --json (the daemon's record)
// and pod status --json all write "signal": "KILL", as systemd does.
func TestSignalSameOnEveryFace(t *testing.T) {
	const script = "kill -KILL $$"
	out, _, code := unitrun(t, "run", "--json", "--", "/bin/sh", "-c", script)
	var run result
	decode(t, "run", out, &run)
	if code != 128+9 || run.Signal != "KILL" || run.ExitCode != nil {
		t.Errorf("run --json: exit %d, %s; want 137, signal KILL, exit_code null", code, out)
	}

	t.Setenv("UNITRUN_SOCKET", startDaemon(t))
	out, _, code = unitrun(t, "op", "call", "--json", "--no-wait", "sh", script)
	var called struct{ ID string }
	decode(t, "op call --no-wait", out, &called)
	if _, errs, code := unitrun(t, "op", "wait", called.ID); code != 128+9 {
		t.Fatalf("op wait %s: exit %d, stderr %q; want 137", called.ID, code, errs)
	}
	out, _, code = unitrun(t, "op", "status", "--json", called.ID)
	var rec api.Record
	decode(t, "op status", out, &rec)
	if code != 0 || rec.Signal != run.Signal || rec.ExitCode != nil || rec.State != api.StateFailed {
		t.Errorf("op status --json: exit %d, %s; want signal %q as run --json wrote it, exit_code null", code, out, run.Signal)
	}

	dir := t.TempDir()
	path := manifestFile(t, "name: killed\napps:\n  - name: a\n    exec: [/bin/sh, -c, \""+script+"\"]\n")
	rmPod(t, dir, "killed")
	if _, errs, code := podCLI(t, dir, "run", path); code != 128+9 {
		t.Fatalf("pod run: exit %d, stderr %q; want 137", code, errs)
	}
	out, _, _ = podCLI(t, dir, "status", "--json", "killed")
	var v podView
	decode(t, "pod status", out, &v)
	if len(v.Apps) != 1 || v.Apps[0].Signal != run.Signal || v.Apps[0].ExitCode == nil || *v.Apps[0].ExitCode != 128+9 {
		t.Errorf("pod status --json: %s; want the app's signal %q as run --json wrote it, exit_code 137 (a pod's app writes 128+N)", out, run.Signal)
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
