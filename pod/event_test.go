package pod

import (
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
			var b strings.Builder
			w := NewPodEvents("p")
			for _, r := range c.records {
				for _, e := range w.Next(PodStatus{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{r}}, time.Now()) {
					b.WriteString(e.String() + "\n")
				}
			}
			got := strings.ReplaceAll(b.String(), "app api ", "")
			if got != c.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// A probe's failures are told as its count goes up, again after a reset;
// the pod's end comes last, once.
func TestPodEventsOfProbesAndEnd(t *testing.T) {
	code := 1
	probe := func(n int) *record.ProbeStatus {
		return &record.ProbeStatus{LastResult: "failure", Message: "refused", ConsecutiveFailures: n}
	}
	run := record.AppStatus{Name: "api", State: record.AppRunning}
	w := NewPodEvents("p")
	var got []string
	for _, s := range []PodStatus{
		{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{run}},
		{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{{Name: "api", State: record.AppRunning, Probe: probe(1)}}},
		{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{{Name: "api", State: record.AppRunning, Probe: probe(3), Readiness: probe(1)}}},
		{Name: "p", Phase: PodRunning, Apps: []record.AppStatus{{Name: "api", State: record.AppRunning, Probe: probe(0), Readiness: probe(1)}}},
		{Name: "p", Phase: PodFailed, ExitCode: &code, Apps: []record.AppStatus{{Name: "api", State: record.AppFailed, ExitCode: &code, Probe: probe(1)}}},
		{Name: "p", Phase: PodFailed, ExitCode: &code, Apps: []record.AppStatus{{Name: "api", State: record.AppFailed, ExitCode: &code, Probe: probe(1)}}},
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
		"app api failed exit 1",
		"app api liveness probe failed (1 in a row): refused",
		"pod p Failed exit 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
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
