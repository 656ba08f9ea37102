package pod

import (
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit/exit"
)

// policyPod has an init app, and apps with every restart policy; the exit
// policy is set per case.
func policyPod(t *testing.T, exitPolicy record.ExitPolicy) *Manifest {
	t.Helper()
	m, err := Parse([]byte(`
name: p
exitPolicy: ` + string(exitPolicy) + `
restartBackoff: {initial: 1s, max: 10s, reset: 1min}
apps:
  - {name: init, init: true, exec: [/bin/true]}
  - {name: never, exec: [/bin/true]}
  - {name: onfail, restartPolicy: OnFailure, exec: [/bin/true]}
  - {name: always, restartPolicy: Always, exec: [/bin/true]}
`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	ok      = exitOf("exited", "0", "success")
	fail4   = exitOf("exited", "4", "exit-code")
	fail1   = exitOf("exited", "1", "exit-code")
	killed  = exitOf("killed", "KILL", "signal")
	termed  = exitOf("killed", "TERM", "success")
	now     = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	earlier = now.Add(-time.Second)
)

// exitOf is the Exit of a run that systemd describes to ExecStopPost= with
// $EXIT_CODE code, $EXIT_STATUS status and $SERVICE_RESULT result, as the
// reaper reads it.
func exitOf(code, status, result string) record.Exit {
	x, err := exit.ExitFromEnv(result, code, status)
	if err != nil {
		panic(err)
	}
	return record.Exit{Exit: x, Success: result == "success"}
}

func ended(apps ...string) []record.Outcome {
	var out []record.Outcome
	for _, a := range apps {
		out = append(out, record.Outcome{App: a, Exit: ok, At: earlier})
	}
	return out
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy record.ExitPolicy
		ev     record.Event
		want   record.Decision
	}{
		// Restart policies.
		{"Never, success", record.FirstFailure, record.Event{App: "never", Exit: ok}, record.Decision{}},
		{"Never, failure ends the pod", record.FirstFailure, record.Event{App: "never", Exit: fail4}, record.Decision{EndPod: true, PodExitCode: 4}},
		{"OnFailure, success", record.FirstFailure, record.Event{App: "onfail", Exit: ok}, record.Decision{}},
		{"OnFailure, failure restarts", record.FirstFailure, record.Event{App: "onfail", Exit: fail4}, record.Decision{Restart: true}},
		{"OnFailure, killed restarts", record.FirstFailure, record.Event{App: "onfail", Exit: killed}, record.Decision{Restart: true}},
		{"OnFailure, clean TERM ends", record.FirstFailure, record.Event{App: "onfail", Exit: termed}, record.Decision{}},
		{"Always, success restarts", record.FirstFailure, record.Event{App: "always", Exit: ok}, record.Decision{Restart: true}},
		{"Always, failure restarts", record.FirstFailure, record.Event{App: "always", Exit: fail4}, record.Decision{Restart: true}},
		{"Always, stopped ends", record.FirstFailure, record.Event{App: "always", Exit: termed, Stopped: true}, record.Decision{}},
		{"OnFailure, stopped and failed ends the pod", record.FirstFailure, record.Event{App: "onfail", Exit: killed, Stopped: true}, record.Decision{EndPod: true, PodExitCode: 137}},
		{"init failure ends the pod under all", record.AllExit, record.Event{App: "init", Exit: fail1}, record.Decision{EndPod: true, PodExitCode: 1}},

		// Back-off, as the kubelet's: the first restart at once, then the
		// initial delay, doubling.
		{"restart after an immediate one waits the initial delay", record.FirstFailure, record.Event{App: "always", Exit: fail4, History: record.History{Restarted: true, StartedAt: earlier}, Now: now}, record.Decision{Restart: true, Delay: time.Second}},
		{"run of reset restarts at once", record.FirstFailure, record.Event{App: "always", Exit: fail4, History: record.History{Restarted: true, LastDelay: 10 * time.Second, StartedAt: now.Add(-time.Minute)}, Now: now}, record.Decision{Restart: true}},
		{"second delay doubles", record.FirstFailure, record.Event{App: "always", Exit: fail4, History: record.History{Restarted: true, LastDelay: time.Second, StartedAt: earlier}, Now: now}, record.Decision{Restart: true, Delay: 2 * time.Second}},
		{"delay doubles up to max", record.FirstFailure, record.Event{App: "always", Exit: fail4, History: record.History{Restarted: true, LastDelay: 8 * time.Second, StartedAt: earlier}, Now: now}, record.Decision{Restart: true, Delay: 10 * time.Second}},
		{"delay stays at max", record.FirstFailure, record.Event{App: "always", Exit: fail4, History: record.History{Restarted: true, LastDelay: 10 * time.Second, StartedAt: earlier}, Now: now}, record.Decision{Restart: true, Delay: 10 * time.Second}},
		{"run just under reset keeps doubling", record.FirstFailure, record.Event{App: "always", Exit: fail4, History: record.History{Restarted: true, LastDelay: 4 * time.Second, StartedAt: now.Add(-time.Minute + time.Nanosecond)}, Now: now}, record.Decision{Restart: true, Delay: 8 * time.Second}},

		{"unknown start never resets", record.FirstFailure, record.Event{App: "always", Exit: fail4, History: record.History{Restarted: true, LastDelay: 2 * time.Second}, Now: now}, record.Decision{Restart: true, Delay: 4 * time.Second}},
		{"delay below initial goes up to initial", record.FirstFailure, record.Event{App: "always", Exit: fail4, History: record.History{Restarted: true, LastDelay: time.Millisecond, StartedAt: earlier}, Now: now}, record.Decision{Restart: true, Delay: time.Second}},

		// first-failure.
		{"first-failure: success with others running", record.FirstFailure, record.Event{App: "never", Exit: ok, Now: now}, record.Decision{}},
		{"first-failure: last app ends the pod", record.FirstFailure, record.Event{App: "never", Exit: ok, Ended: ended("init", "onfail", "always"), Now: now}, record.Decision{EndPod: true}},
		{"first-failure: failure of the last app", record.FirstFailure, record.Event{App: "never", Exit: fail4, Ended: ended("init", "onfail", "always"), Now: now}, record.Decision{EndPod: true, PodExitCode: 4}},
		{"first-failure: init success", record.FirstFailure, record.Event{App: "init", Exit: ok}, record.Decision{}},
		{"first-failure: init failure", record.FirstFailure, record.Event{App: "init", Exit: fail1}, record.Decision{EndPod: true, PodExitCode: 1}},

		// any.
		{"any: first app ends the pod", record.AnyExit, record.Event{App: "never", Exit: ok}, record.Decision{EndPod: true}},
		{"any: first app failing", record.AnyExit, record.Event{App: "never", Exit: fail4}, record.Decision{EndPod: true, PodExitCode: 4}},
		{"any: init success does not", record.AnyExit, record.Event{App: "init", Exit: ok}, record.Decision{}},
		{"any: init failure does", record.AnyExit, record.Event{App: "init", Exit: fail1}, record.Decision{EndPod: true, PodExitCode: 1}},
		{"any: restarting app does not", record.AnyExit, record.Event{App: "always", Exit: ok}, record.Decision{Restart: true}},

		// all.
		{"all: failure with others running", record.AllExit, record.Event{App: "never", Exit: fail4}, record.Decision{}},
		{"all: success with others running", record.AllExit, record.Event{App: "never", Exit: ok}, record.Decision{}},
		{"all: last app ends the pod", record.AllExit, record.Event{App: "onfail", Exit: ok, Ended: ended("init", "never", "always"), Now: now}, record.Decision{EndPod: true}},
		{"all: restarting last app does not", record.AllExit, record.Event{App: "onfail", Exit: fail4, Ended: ended("init", "never", "always"), Now: now}, record.Decision{Restart: true}},
		{"all: the first failure gives the code", record.AllExit,
			record.Event{App: "onfail", Exit: killed, Stopped: true, Now: now, Ended: []record.Outcome{
				{App: "init", Exit: ok, At: earlier.Add(-time.Hour)},
				{App: "always", Exit: fail1, At: earlier},
				{App: "never", Exit: fail4, At: earlier.Add(-time.Minute)},
			}},
			record.Decision{EndPod: true, PodExitCode: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := record.Decide(policyPod(t, c.policy).Policy(), c.ev)
			if err != nil || got != c.want {
				t.Errorf("Decide(%+v) = %+v, %v; want %+v", c.ev, got, err, c.want)
			}
		})
	}
}

func TestDecideErrors(t *testing.T) {
	m := policyPod(t, record.FirstFailure)
	for _, ev := range []record.Event{
		{App: "nope", Exit: ok},
		{App: "never", Exit: ok, Ended: ended("never")},
		{App: "never", Exit: ok, Ended: ended("nope")},
		{App: "never", Exit: ok, Ended: ended("init", "init")},
	} {
		if _, err := record.Decide(m.Policy(), ev); err == nil {
			t.Errorf("Decide(%+v) succeeded", ev)
		}
	}
}

func TestPodExitCode(t *testing.T) {
	for _, c := range []struct {
		name  string
		ended []record.Outcome
		want  int
	}{
		{"none", nil, 0},
		{"all succeeded", []record.Outcome{{App: "a", Exit: ok, At: now}, {App: "b", Exit: termed, At: now}}, 0},
		{"success code 3 counts as success", []record.Outcome{{App: "a", Exit: exitOf("exited", "3", "success"), At: now}}, 0},
		{"first failure by time", []record.Outcome{{App: "a", Exit: fail1, At: now}, {App: "b", Exit: fail4, At: earlier}}, 4},
		{"signal", []record.Outcome{{App: "a", Exit: ok, At: earlier}, {App: "b", Exit: killed, At: now}}, 137},
		{"tie keeps list order", []record.Outcome{{App: "a", Exit: fail1, At: now}, {App: "b", Exit: fail4, At: now}}, 1},
		{"failure with code 0", []record.Outcome{{App: "a", Exit: ok, At: earlier}, {App: "b", Exit: record.Exit{Exit: exit.Exit{Ran: true, Result: "success"}}, At: now}}, 1},
	} {
		if got := record.PodExitCode(c.ended); got != c.want {
			t.Errorf("%s: PodExitCode = %d, want %d", c.name, got, c.want)
		}
	}
}

// A sidecar restarts after every exit on its own, ends without ending the
// pod when stopped, and does not count among "every app": the pod ends
// when its one app has.
func TestDecideSidecar(t *testing.T) {
	m, err := Parse([]byte(`
name: p
restartBackoff: {initial: 1s, max: 10s, reset: 1min}
apps:
  - {name: side, sidecar: true, exec: [/bin/true]}
  - {name: app, exec: [/bin/true]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if a := m.App("side"); a.RestartPolicy != record.Always {
		t.Errorf("sidecar's restart policy %s, want Always", a.RestartPolicy)
	}
	for _, c := range []struct {
		ev   record.Event
		want record.Decision
	}{
		{record.Event{App: "side", Exit: fail4, Now: now}, record.Decision{Restart: true}},
		{record.Event{App: "side", Exit: ok, Now: now}, record.Decision{Restart: true}},
		{record.Event{App: "side", Exit: fail4, Stopped: true, Now: now}, record.Decision{}},
		{record.Event{App: "app", Exit: ok, Now: now}, record.Decision{EndPod: true}},
		{record.Event{App: "app", Exit: fail4, Now: now}, record.Decision{EndPod: true, PodExitCode: 4}},
	} {
		got, err := record.Decide(m.Policy(), c.ev)
		if err != nil || got != c.want {
			t.Errorf("Decide(%+v) = %+v, %v; want %+v", c.ev, got, err, c.want)
		}
	}
	if _, err := record.Decide(m.Policy(), record.Event{App: "app", Exit: ok, Ended: ended("side")}); err == nil {
		t.Error("Decide accepted a sidecar among the ended apps")
	}
}
