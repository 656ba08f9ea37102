package pod

import (
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit"
)

// policyPod has an init app, and apps with every restart policy; the exit
// policy is set per case.
func policyPod(t *testing.T, exitPolicy ExitPolicy) *Manifest {
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
func exitOf(code, status, result string) Exit {
	x, err := unit.ExitFromEnv(result, code, status)
	if err != nil {
		panic(err)
	}
	return Exit{Exit: x, Success: result == "success"}
}

func ended(apps ...string) []Outcome {
	var out []Outcome
	for _, a := range apps {
		out = append(out, Outcome{App: a, Exit: ok, At: earlier})
	}
	return out
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy ExitPolicy
		ev     Event
		want   Decision
	}{
		// Restart policies.
		{"Never, success", FirstFailure, Event{App: "never", Exit: ok}, Decision{}},
		{"Never, failure ends the pod", FirstFailure, Event{App: "never", Exit: fail4}, Decision{EndPod: true, PodExitCode: 4}},
		{"OnFailure, success", FirstFailure, Event{App: "onfail", Exit: ok}, Decision{}},
		{"OnFailure, failure restarts", FirstFailure, Event{App: "onfail", Exit: fail4}, Decision{Restart: true}},
		{"OnFailure, killed restarts", FirstFailure, Event{App: "onfail", Exit: killed}, Decision{Restart: true}},
		{"OnFailure, clean TERM ends", FirstFailure, Event{App: "onfail", Exit: termed}, Decision{}},
		{"Always, success restarts", FirstFailure, Event{App: "always", Exit: ok}, Decision{Restart: true}},
		{"Always, failure restarts", FirstFailure, Event{App: "always", Exit: fail4}, Decision{Restart: true}},
		{"Always, stopped ends", FirstFailure, Event{App: "always", Exit: termed, Stopped: true}, Decision{}},
		{"OnFailure, stopped and failed ends the pod", FirstFailure, Event{App: "onfail", Exit: killed, Stopped: true}, Decision{EndPod: true, PodExitCode: 137}},
		{"init failure ends the pod under all", AllExit, Event{App: "init", Exit: fail1}, Decision{EndPod: true, PodExitCode: 1}},

		// Back-off, as the kubelet's: the first restart at once, then the
		// initial delay, doubling.
		{"restart after an immediate one waits the initial delay", FirstFailure, Event{App: "always", Exit: fail4, History: History{Restarted: true, StartedAt: earlier}, Now: now}, Decision{Restart: true, Delay: time.Second}},
		{"run of reset restarts at once", FirstFailure, Event{App: "always", Exit: fail4, History: History{Restarted: true, LastDelay: 10 * time.Second, StartedAt: now.Add(-time.Minute)}, Now: now}, Decision{Restart: true}},
		{"second delay doubles", FirstFailure, Event{App: "always", Exit: fail4, History: History{Restarted: true, LastDelay: time.Second, StartedAt: earlier}, Now: now}, Decision{Restart: true, Delay: 2 * time.Second}},
		{"delay doubles up to max", FirstFailure, Event{App: "always", Exit: fail4, History: History{Restarted: true, LastDelay: 8 * time.Second, StartedAt: earlier}, Now: now}, Decision{Restart: true, Delay: 10 * time.Second}},
		{"delay stays at max", FirstFailure, Event{App: "always", Exit: fail4, History: History{Restarted: true, LastDelay: 10 * time.Second, StartedAt: earlier}, Now: now}, Decision{Restart: true, Delay: 10 * time.Second}},
		{"run just under reset keeps doubling", FirstFailure, Event{App: "always", Exit: fail4, History: History{Restarted: true, LastDelay: 4 * time.Second, StartedAt: now.Add(-time.Minute + time.Nanosecond)}, Now: now}, Decision{Restart: true, Delay: 8 * time.Second}},

		{"unknown start never resets", FirstFailure, Event{App: "always", Exit: fail4, History: History{Restarted: true, LastDelay: 2 * time.Second}, Now: now}, Decision{Restart: true, Delay: 4 * time.Second}},
		{"delay below initial goes up to initial", FirstFailure, Event{App: "always", Exit: fail4, History: History{Restarted: true, LastDelay: time.Millisecond, StartedAt: earlier}, Now: now}, Decision{Restart: true, Delay: time.Second}},

		// first-failure.
		{"first-failure: success with others running", FirstFailure, Event{App: "never", Exit: ok, Now: now}, Decision{}},
		{"first-failure: last app ends the pod", FirstFailure, Event{App: "never", Exit: ok, Ended: ended("init", "onfail", "always"), Now: now}, Decision{EndPod: true}},
		{"first-failure: failure of the last app", FirstFailure, Event{App: "never", Exit: fail4, Ended: ended("init", "onfail", "always"), Now: now}, Decision{EndPod: true, PodExitCode: 4}},
		{"first-failure: init success", FirstFailure, Event{App: "init", Exit: ok}, Decision{}},
		{"first-failure: init failure", FirstFailure, Event{App: "init", Exit: fail1}, Decision{EndPod: true, PodExitCode: 1}},

		// any.
		{"any: first app ends the pod", AnyExit, Event{App: "never", Exit: ok}, Decision{EndPod: true}},
		{"any: first app failing", AnyExit, Event{App: "never", Exit: fail4}, Decision{EndPod: true, PodExitCode: 4}},
		{"any: init success does not", AnyExit, Event{App: "init", Exit: ok}, Decision{}},
		{"any: init failure does", AnyExit, Event{App: "init", Exit: fail1}, Decision{EndPod: true, PodExitCode: 1}},
		{"any: restarting app does not", AnyExit, Event{App: "always", Exit: ok}, Decision{Restart: true}},

		// all.
		{"all: failure with others running", AllExit, Event{App: "never", Exit: fail4}, Decision{}},
		{"all: success with others running", AllExit, Event{App: "never", Exit: ok}, Decision{}},
		{"all: last app ends the pod", AllExit, Event{App: "onfail", Exit: ok, Ended: ended("init", "never", "always"), Now: now}, Decision{EndPod: true}},
		{"all: restarting last app does not", AllExit, Event{App: "onfail", Exit: fail4, Ended: ended("init", "never", "always"), Now: now}, Decision{Restart: true}},
		{"all: the first failure gives the code", AllExit,
			Event{App: "onfail", Exit: killed, Stopped: true, Now: now, Ended: []Outcome{
				{App: "init", Exit: ok, At: earlier.Add(-time.Hour)},
				{App: "always", Exit: fail1, At: earlier},
				{App: "never", Exit: fail4, At: earlier.Add(-time.Minute)},
			}},
			Decision{EndPod: true, PodExitCode: 4}},
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
	m := policyPod(t, FirstFailure)
	for _, ev := range []Event{
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
		ended []Outcome
		want  int
	}{
		{"none", nil, 0},
		{"all succeeded", []Outcome{{App: "a", Exit: ok, At: now}, {App: "b", Exit: termed, At: now}}, 0},
		{"success code 3 counts as success", []Outcome{{App: "a", Exit: exitOf("exited", "3", "success"), At: now}}, 0},
		{"first failure by time", []Outcome{{App: "a", Exit: fail1, At: now}, {App: "b", Exit: fail4, At: earlier}}, 4},
		{"signal", []Outcome{{App: "a", Exit: ok, At: earlier}, {App: "b", Exit: killed, At: now}}, 137},
		{"tie keeps list order", []Outcome{{App: "a", Exit: fail1, At: now}, {App: "b", Exit: fail4, At: now}}, 1},
		{"failure with code 0", []Outcome{{App: "a", Exit: ok, At: earlier}, {App: "b", Exit: Exit{Exit: unit.Exit{Ran: true, Result: "success"}}, At: now}}, 1},
	} {
		if got := PodExitCode(c.ended); got != c.want {
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
	if a := m.App("side"); a.RestartPolicy != Always {
		t.Errorf("sidecar's restart policy %s, want Always", a.RestartPolicy)
	}
	for _, c := range []struct {
		ev   Event
		want Decision
	}{
		{Event{App: "side", Exit: fail4, Now: now}, Decision{Restart: true}},
		{Event{App: "side", Exit: ok, Now: now}, Decision{Restart: true}},
		{Event{App: "side", Exit: fail4, Stopped: true, Now: now}, Decision{}},
		{Event{App: "app", Exit: ok, Now: now}, Decision{EndPod: true}},
		{Event{App: "app", Exit: fail4, Now: now}, Decision{EndPod: true, PodExitCode: 4}},
	} {
		got, err := record.Decide(m.Policy(), c.ev)
		if err != nil || got != c.want {
			t.Errorf("Decide(%+v) = %+v, %v; want %+v", c.ev, got, err, c.want)
		}
	}
	if _, err := record.Decide(m.Policy(), Event{App: "app", Exit: ok, Ended: ended("side")}); err == nil {
		t.Error("Decide accepted a sidecar among the ended apps")
	}
}
