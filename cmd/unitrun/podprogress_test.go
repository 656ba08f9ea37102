package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/unitrun/unitrun/pod"
)

// The events of an app follow from its records, one run after another,
// whether each record was read or some were missed between two reads.
func TestPodWatchReportsEveryRun(t *testing.T) {
	one, two := 1, 2
	app := func(st pod.AppState, restarts int, code *int, sig string) pod.AppStatus {
		return pod.AppStatus{Name: "api", State: st, Restarts: restarts, ExitCode: code, Signal: sig}
	}
	for _, c := range []struct {
		name    string
		records []pod.AppStatus
		want    string
	}{
		{"every record read", []pod.AppStatus{
			app(pod.AppWaiting, 0, nil, ""),
			app(pod.AppRunning, 0, nil, ""),
			app(pod.AppRestarting, 0, &one, ""), // restarts counts the runs that began after a restart
			app(pod.AppRunning, 1, &one, ""),
			app(pod.AppFailed, 1, &two, ""),
		}, "running\nrestarting exit 1\nrunning\nfailed exit 2\n"},
		{"only the last read", []pod.AppStatus{
			app(pod.AppFailed, 2, &two, ""),
		}, "running\nrestarting\nrunning\nrestarting\nrunning\nfailed exit 2\n"},
		{"restarted twice between reads", []pod.AppStatus{
			app(pod.AppRunning, 0, nil, ""),
			app(pod.AppRunning, 2, nil, "KILL"),
			app(pod.AppExited, 2, new(int), ""),
		}, "running\nrestarting\nrunning\nrestarting signal KILL\nrunning\nexited exit 0\n"},
		{"stopped during its back-off", []pod.AppStatus{
			app(pod.AppRunning, 0, nil, ""),
			app(pod.AppRestarting, 0, &one, ""),
			app(pod.AppFailed, 0, &one, ""), // the stop keeps the last run's exit
			app(pod.AppFailed, 0, &one, ""),
		}, "running\nrestarting exit 1\nfailed exit 1\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			w := &podWatch{p: &progress{err: &term{w: &b}}, seen: map[string]*runsSeen{}}
			for _, r := range c.records {
				w.report(r)
			}
			got := strings.ReplaceAll(stampRE.ReplaceAllString(b.String(), ""), "app api ", "")
			if got != c.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// Output written while the status line ticks lands whole, with the line
// lifted off around it, and the line is gone once stopped.
func TestProgressLiftsBlockAroundOutput(t *testing.T) {
	// The progress's lock orders every write to the shared screen.
	var screen strings.Builder
	p := &progress{err: &term{w: &screen, tty: true, cursor: true}, out: &screen, share: true}
	stop := p.ticking(func() []string { return []string{"status"} })
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				p.Write([]byte("line\n"))
			}
		}()
	}
	wg.Wait()
	stop()
	got := screen.String()
	if n := strings.Count(got, "line\n"); n != 200 {
		t.Errorf("%d output lines arrived, want 200", n)
	}
	// Each status line drawn is erased before anything else is written.
	if draws, erases := strings.Count(got, "status\n"), strings.Count(got, "\x1b[1F\x1b[J"); draws != erases || draws < 200 {
		t.Errorf("status line drawn %d times, erased %d times", draws, erases)
	}
	if !strings.HasSuffix(got, "status\n\x1b[1F\x1b[J") {
		t.Errorf("screen does not end with the status line erased: %q", got[max(0, len(got)-40):])
	}
	p.Write([]byte("partial"))
	p.draw([]string{"status"})
	if tail := screen.String()[len(got):]; tail != "partial" {
		t.Errorf("a block drawn under a line not ended: %q", tail)
	}
}
