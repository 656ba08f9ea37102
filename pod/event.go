package pod

import (
	"fmt"
	"github.com/unitrun/unitrun/pod/record"
	"strings"
	"time"
)

// An EventType says what changed in a pod.
type EventType string

// The changes a [PodEvent] tells of.
const (
	// EventStarted: a run of an app began.
	EventStarted EventType = "app-started"
	// EventRestarting: a run of an app ended, and the app restarts after
	// its back-off.
	EventRestarting EventType = "app-restarting"
	// EventExited: an app's last run ended and it succeeded: it is done.
	EventExited EventType = "app-exited"
	// EventFailed: an app's last run ended and it failed: it is done.
	EventFailed EventType = "app-failed"
	// EventProbeFailed: a check of one of an app's probes failed.
	EventProbeFailed EventType = "probe-failed"
	// EventPodEnded: the pod ended, Succeeded or Failed.
	EventPodEnded EventType = "pod-ended"
)

// A PodEvent is one change of a pod, as [PodEvents] finds it in the pod's
// records: what "pod run" and "pod events" print, a line of text each
// ([PodEvent.String]) or a JSON object each.
type PodEvent struct {
	// Time is when the change was seen.
	Time time.Time `json:"time"`
	Type EventType `json:"type"`
	Pod  string    `json:"pod"`
	// App is the app's name; "" for EventPodEnded.
	App string `json:"app,omitempty"`
	// Run counts the app's runs, the first one 1: the run that started,
	// or that ended.
	Run int `json:"run,omitempty"`
	// ExitCode and Signal tell how the run ended (EventRestarting,
	// EventExited, EventFailed; a restart between two reads of the records,
	// whose exit the records no longer hold, has neither), or the pod's
	// exit code (EventPodEnded).
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
	// Phase is the pod's final phase (EventPodEnded).
	Phase Phase `json:"phase,omitempty"`
	// Probe is the probe that failed, "liveness", "readiness" or
	// "startup", with the check's Message and the ConsecutiveFailures
	// it has now (EventProbeFailed).
	Probe               string `json:"probe,omitempty"`
	Message             string `json:"message,omitempty"`
	ConsecutiveFailures int    `json:"consecutive_failures,omitempty"`
}

// String tells e in one line: "app api running", "app api restarting exit
// 3", "app api failed signal KILL", "app api liveness probe failed
// (2 in a row): ...", "pod web Failed exit 3".
func (e PodEvent) String() string {
	exit := ""
	switch {
	case e.Signal != "":
		exit = " signal " + e.Signal
	case e.ExitCode != nil:
		exit = fmt.Sprintf(" exit %d", *e.ExitCode)
	}
	switch e.Type {
	case EventStarted:
		return fmt.Sprintf("app %s running", e.App)
	case EventRestarting:
		return fmt.Sprintf("app %s restarting%s", e.App, exit)
	case EventExited:
		return fmt.Sprintf("app %s %s%s", e.App, record.AppExited, exit)
	case EventFailed:
		return fmt.Sprintf("app %s %s%s", e.App, record.AppFailed, exit)
	case EventProbeFailed:
		// An exec probe's message is what its check printed, most
		// often ending in a newline, and may hold several lines: each
		// run of white space is one space, so the event stays one line.
		return fmt.Sprintf("app %s %s probe failed (%d in a row): %s", e.App, e.Probe, e.ConsecutiveFailures, strings.Join(strings.Fields(e.Message), " "))
	}
	return fmt.Sprintf("pod %s %s%s", e.Pod, e.Phase, exit)
}

// PodEvents finds the changes of one pod in its records, read again and
// again: each read gives the events since the one before. A run that
// starts and ends between two reads still gets both events, so the
// sequence does not depend on how often the records are read; and the
// probe failures read of a run come before its end, even when the same
// read finds both.
type PodEvents struct {
	pod    string
	apps   map[string]*runsSeen
	probes map[string]probeSeen // by app/probe
	ended  bool
}

// runsSeen counts the runs of an app told started and ended.
// restarting is whether the last run told ended was told as
// "restarting" while the app waited to restart: a stop during the
// back-off ends the app with that run's exit, in a final state that
// is then still to be told.
type runsSeen struct {
	started, ended int
	restarting     bool
}

// probeSeen is the state of a probe told last: the run it counts the
// failures of (record.ProbeStatus.RunStartedAt), and how many.
type probeSeen struct {
	run      time.Time
	failures int
}

// NewPodEvents returns the events of pod name, none seen yet.
func NewPodEvents(name string) *PodEvents {
	return &PodEvents{pod: name, apps: map[string]*runsSeen{}, probes: map[string]probeSeen{}}
}

// Next returns the events that s, the pod's status read at now, tells of
// and earlier reads did not: each app's, in the order they happened, the
// apps in s's order, then the pod's end.
func (w *PodEvents) Next(s PodStatus, now time.Time) []PodEvent {
	var list []PodEvent
	for _, a := range s.Apps {
		list = w.app(list, a, now)
	}
	if s.Ended() && !w.ended {
		w.ended = true
		list = append(list, PodEvent{Time: now, Type: EventPodEnded, Pod: w.pod, Phase: s.Phase, ExitCode: s.ExitCode})
	}
	return list
}

// runs returns how many runs of app a have started and ended, from its
// record: each restart is a run that ended, and an app waiting to restart
// has ended the run its restarts do not count yet.
func runs(a record.AppStatus) (started, ended int) {
	switch a.State {
	case record.AppRunning:
		return a.Restarts + 1, a.Restarts
	case record.AppRestarting, record.AppExited, record.AppFailed:
		return a.Restarts + 1, a.Restarts + 1
	}
	return 0, 0
}

// app appends to list the events of app a not told yet: every run is
// started, then its probes' failures, then restarting or its final state;
// an app stopped while it waited to restart then gets its final state
// too.
func (w *PodEvents) app(list []PodEvent, a record.AppStatus, now time.Time) []PodEvent {
	k := w.apps[a.Name]
	if k == nil {
		k = &runsSeen{}
		w.apps[a.Name] = k
	}
	ev := func(t EventType, run int) PodEvent {
		return PodEvent{Time: now, Type: t, Pod: w.pod, App: a.Name, Run: run}
	}
	exit := func(e PodEvent) PodEvent {
		e.ExitCode, e.Signal = a.ExitCode, a.Signal
		return e
	}
	final := func() PodEvent {
		if a.State == record.AppExited {
			return exit(ev(EventExited, k.ended))
		}
		return exit(ev(EventFailed, k.ended))
	}
	started, ended := runs(a)
	failures := w.probeFailures(a, started, ended, ev)
	// probed appends the failures of the runs up to run, all of them
	// before the end of run.
	probed := func(run int) {
		for len(failures) > 0 && failures[0].Run <= run {
			list = append(list, failures[0])
			failures = failures[1:]
		}
	}
	for k.started < started || k.ended < ended {
		if k.started == k.ended {
			k.started++
			k.restarting = false
			list = append(list, ev(EventStarted, k.started))
			continue
		}
		k.ended++
		probed(k.ended)
		// The record keeps only the last exit: that of the last run
		// that ended, a restart while the app runs again or waits to,
		// else its final one.
		switch {
		case k.ended < ended:
			list = append(list, ev(EventRestarting, k.ended))
		case a.State == record.AppRunning || a.State == record.AppRestarting:
			k.restarting = a.State == record.AppRestarting
			list = append(list, exit(ev(EventRestarting, k.ended)))
		default:
			list = append(list, final())
		}
	}
	probed(started)
	if k.restarting && (a.State == record.AppExited || a.State == record.AppFailed) {
		k.restarting = false
		list = append(list, final())
	}
	return list
}

// probeFailures returns the failures of a's probes not told yet, those
// of the run that ended last first: the states in a's record each count
// the failures of one run (RunStartedAt), the one running (which is run
// started) or the one whose exit is recorded (run ended). A state of an
// earlier run, whose number the record no longer holds, or of no run
// named, tells none.
func (w *PodEvents) probeFailures(a record.AppStatus, started, ended int, ev func(EventType, int) PodEvent) []PodEvent {
	var last, running []PodEvent
	for _, p := range []struct {
		kind string
		st   *record.ProbeStatus
	}{{"liveness", a.Probe}, {"startup", a.Startup}, {"readiness", a.Readiness}} {
		key := a.Name + "/" + p.kind
		if p.st == nil {
			delete(w.probes, key)
			continue
		}
		seen := w.probes[key]
		if !seen.run.Equal(p.st.RunStartedAt) {
			seen = probeSeen{run: p.st.RunStartedAt}
		}
		n := p.st.ConsecutiveFailures
		told := n > seen.failures
		seen.failures = n
		w.probes[key] = seen
		if !told || p.st.RunStartedAt.IsZero() {
			continue
		}
		e := ev(EventProbeFailed, 0)
		e.Probe, e.Message, e.ConsecutiveFailures = p.kind, p.st.Message, n
		switch {
		case a.State == record.AppRunning && p.st.RunStartedAt.Equal(a.StartedAt):
			e.Run = started
			running = append(running, e)
		case ended > 0 && p.st.RunStartedAt.Equal(a.LastStartedAt):
			e.Run = ended
			last = append(last, e)
		}
	}
	return append(last, running...)
}
