package pod

import (
	"fmt"
	"github.com/unitrun/unitrun/pod/record"
	"strings"
	"testing"
	"time"
)

// The events of an app follow from its records, one run after another,
// whether each record was read or some were missed between two reads.
func TestPodEventsOfEveryRun(t *testing.T) {
	one, two := 1, 2
	app := func(st record.AppState, restarts int, code *int, sig string) record.AppStatus {
		return record.AppStatus{Name: "api", State: st, Restarts: restarts, ExitCode: code, Signal: sig}
	}
	for _, c := range []struct {
		name    string
		records []record.AppStatus
		want    string
	}{
		{"every record read", []record.AppStatus{
			app(record.AppWaiting, 0, nil, ""),
			app(record.AppRunning, 0, nil, ""),
			app(record.AppRestarting, 0, &one, ""), // restarts counts the runs that began after a restart
			app(record.AppRunning, 1, &one, ""),
			app(record.AppFailed, 1, &two, ""),
		}, "running\nrestarting exit 1\nrunning\nfailed exit 2\n"},
		{"only the last read", []record.AppStatus{
			app(record.AppFailed, 2, &two, ""),
		}, "running\nrestarting\nrunning\nrestarting\nrunning\nfailed exit 2\n"},
		{"restarted twice between reads", []record.AppStatus{
			app(record.AppRunning, 0, nil, ""),
			app(record.AppRunning, 2, nil, "KILL"),
			app(record.AppExited, 2, new(int), ""),
		}, "running\nrestarting\nrunning\nrestarting signal KILL\nrunning\nexited exit 0\n"},
		{"stopped during its back-off", []record.AppStatus{
			app(record.AppRunning, 0, nil, ""),
			app(record.AppRestarting, 0, &one, ""),
			app(record.AppFailed, 0, &one, ""), // the stop keeps the last run's exit
			app(record.AppFailed, 0, &one, ""),
		}, "running\nrestarting exit 1\nfailed exit 1\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := eventsRead(c.records, func(e PodEvent) string { return strings.TrimPrefix(e.String(), "app api ") })
			if got != c.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// A probe's failures are told as its count goes up, again after a reset,
// those of a run before its end; the pod's end comes last, once.
func TestPodEventsOfProbesAndEnd(t *testing.T) {
	code := 1
	t1 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	probe := func(n int) *record.ProbeStatus {
		return &record.ProbeStatus{LastResult: "failure", Message: "refused", ConsecutiveFailures: n, RunStartedAt: t1}
	}
	running := func(live, ready *record.ProbeStatus) record.AppStatus {
		return record.AppStatus{Name: "api", State: record.AppRunning, StartedAt: t1, Probe: live, Readiness: ready}
	}
	failed := record.AppStatus{Name: "api", State: record.AppFailed, ExitCode: &code, LastStartedAt: t1, StartedAt: t1, Probe: probe(1)}
	w := NewPodEvents("p")
	var got []string
	for _, s := range []PodStatus{
		{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{running(nil, nil)}},
		{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{running(probe(1), nil)}},
		{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{running(probe(3), probe(1))}},
		{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{running(probe(0), probe(1))}},
		{Name: "p", Phase: PodFailed, ExitCode: &code, Apps: []record.AppStatus{failed}},
		{Name: "p", Phase: PodFailed, ExitCode: &code, Apps: []record.AppStatus{failed}},
	} {
		for _, e := range w.Next(s, time.Now()) {
			got = append(got, e.String())
		}
	}
	want := []string{
		"app api running",
		"app api liveness probe failed (1 in a row): refused",
		"app api liveness probe failed (3 in a row): refused",
		"app api readiness probe failed (1 in a row): refused",
		"app api liveness probe failed (1 in a row): refused",
		"app api failed exit 1",
		"pod p Failed exit 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The failures of a run's probes are told before the run's end, even
// when one read of the records finds both, as when a probe's action ends
// the run (its app stopped: signal TERM); and each is told of the run it
// was a check of, the one its state names, not the one running when the
// state is read: a liveness probe's state outlives its run.
func TestPodEventsOfProbesBeforeTheirRunsEnd(t *testing.T) {
	one := 1
	t1 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	t2 := t1.Add(3 * time.Second)
	live := func(run time.Time, n int, acted record.ProbeAction) *record.ProbeStatus {
		return &record.ProbeStatus{LastResult: "failure", Message: "refused", ConsecutiveFailures: n, Acted: acted, RunStartedAt: run}
	}
	// first is run 1 running; second ended it, then run 2 ran.
	first := record.AppStatus{Name: "api", State: record.AppRunning, StartedAt: t1, Probe: live(t1, 1, "")}
	second := record.AppStatus{Name: "api", State: record.AppRunning, Restarts: 1, StartedAt: t2, LastStartedAt: t1, ExitCode: &one}
	for _, c := range []struct {
		name    string
		records []record.AppStatus
		want    string
	}{
		{"fail-pod, the failure and the end in one read", []record.AppStatus{
			first,
			{Name: "api", State: record.AppFailed, StartedAt: t1, LastStartedAt: t1, Signal: "TERM", Probe: live(t1, 2, record.FailPod)},
		}, "1 running\n1 liveness (1)\n1 liveness (2)\n1 failed signal TERM\n"},
		{"fail-pod, only the last read", []record.AppStatus{
			{Name: "api", State: record.AppFailed, StartedAt: t1, LastStartedAt: t1, Signal: "TERM", Probe: live(t1, 2, record.FailPod)},
		}, "1 running\n1 liveness (2)\n1 failed signal TERM\n"},
		{"restart, the failure, the restart and the next run in one read", []record.AppStatus{
			{Name: "api", State: record.AppRunning, StartedAt: t1},
			withLiveness(second, live(t1, 1, "")),
		}, "1 running\n1 liveness (1)\n1 restarting exit 1\n2 running\n"},
		{"restart, waiting to restart", []record.AppStatus{
			{Name: "api", State: record.AppRunning, StartedAt: t1},
			{Name: "api", State: record.AppRestarting, StartedAt: t1, LastStartedAt: t1, ExitCode: &one, Probe: live(t1, 1, "")},
		}, "1 running\n1 liveness (1)\n1 restarting exit 1\n"},
		{"restart, the next run's first failure as many as the last run's", []record.AppStatus{
			first,
			withLiveness(second, live(t2, 1, "")),
		}, "1 running\n1 liveness (1)\n1 restarting exit 1\n2 running\n2 liveness (1)\n"},
		{"the last run's state read first in the next run", []record.AppStatus{
			withLiveness(second, live(t1, 1, "")),
			withLiveness(second, live(t2, 1, "")),
		}, "1 running\n1 liveness (1)\n1 restarting exit 1\n2 running\n2 liveness (1)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := eventsRead(c.records, func(e PodEvent) string {
				text := strings.TrimPrefix(e.String(), "app api ")
				text = strings.TrimSuffix(strings.Replace(text, " probe failed", "", 1), ": refused")
				return fmt.Sprintf("%d %s", e.Run, strings.Replace(text, " in a row", "", 1))
			})
			if got != c.want {
				t.Errorf("events (run, event):\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// eventsRead returns the events of the records of app api, read one
// after another in a running pod, a line each as line tells it.
func eventsRead(records []record.AppStatus, line func(PodEvent) string) string {
	var b strings.Builder
	w := NewPodEvents("p")
	for _, r := range records {
		for _, e := range w.Next(PodStatus{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{r}}, time.Now()) {
			b.WriteString(line(e) + "\n")
		}
	}
	return b.String()
}

// withLiveness returns a with its liveness probe's state p.
func withLiveness(a record.AppStatus, p *record.ProbeStatus) record.AppStatus {
	a.Probe = p
	return a
}

// An exec probe's message is what its check printed, newlines and all:
// its event is still one line, as "pod run" and "pod events" print one
// line per change.
func TestPodEventOfProbeIsOneLine(t *testing.T) {
	e := PodEvent{Type: EventProbeFailed, Pod: "p", App: "api", Probe: "liveness", ConsecutiveFailures: 2, Message: "not ready\n  db: down\n"}
	if got, want := e.String(), "app api liveness probe failed (2 in a row): not ready db: down"; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
}
