package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
)

// podPollInterval is how often "pod run" reads the pod's status for its
// progress.
const podPollInterval = 100 * time.Millisecond

// podWatch turns a pod's status, read again and again, into progress: an
// event for each run of an app that started or ended, and on a terminal a
// block with one line per app.
type podWatch struct {
	p    *progress
	r    *podrun.Runner
	name string
	seen map[string]*runsSeen
}

// runsSeen counts the runs of an app reported started and ended.
// restarting is whether the last run reported ended was told as
// "restarting" while the app waited to restart: a stop during the
// back-off ends the app with that run's exit, in a final state that
// is then still to be told.
type runsSeen struct {
	started, ended int
	restarting     bool
}

// runs returns how many runs of app a have started and ended, from its
// record: each restart is a run that ended, and an app waiting to restart
// has ended the run its restarts do not count yet.
func runs(a pod.AppStatus) (started, ended int) {
	switch a.State {
	case pod.AppRunning:
		return a.Restarts + 1, a.Restarts
	case pod.AppRestarting, pod.AppExited, pod.AppFailed:
		return a.Restarts + 1, a.Restarts + 1
	}
	return 0, 0
}

// exitText tells how app a's last run ended: " signal TERM", " exit 3",
// or "".
func exitText(a pod.AppStatus) string {
	switch {
	case a.Signal != "":
		return " signal " + a.Signal
	case a.ExitCode != nil:
		return fmt.Sprintf(" exit %d", *a.ExitCode)
	}
	return ""
}

// report prints the events of app a that were not printed yet, in the
// order they happened: every run is "running", then "restarting" or its
// final state, and an app stopped while it waited to restart gets its
// final state after "restarting". A run that started and ended between
// two reads still gets both events, so the sequence does not depend on
// timing.
func (w *podWatch) report(a pod.AppStatus) {
	k := w.seen[a.Name]
	if k == nil {
		k = &runsSeen{}
		w.seen[a.Name] = k
	}
	started, ended := runs(a)
	for k.started < started || k.ended < ended {
		if k.started == k.ended {
			k.started++
			k.restarting = false
			w.p.event("app %s running", a.Name)
			continue
		}
		k.ended++
		// The record keeps only the last exit: that of the last run
		// that ended, a restart while the app runs again or waits to,
		// else its final one.
		switch {
		case k.ended < ended:
			w.p.event("app %s restarting", a.Name)
		case a.State == pod.AppRunning || a.State == pod.AppRestarting:
			k.restarting = a.State == pod.AppRestarting
			w.p.event("app %s restarting%s", a.Name, exitText(a))
		default:
			w.p.event("app %s %s%s", a.Name, a.State, exitText(a))
		}
	}
	if k.restarting && (a.State == pod.AppExited || a.State == pod.AppFailed) {
		k.restarting = false
		w.p.event("app %s %s%s", a.Name, a.State, exitText(a))
	}
}

// poll reads the pod's status, reports what changed and redraws the
// block.
func (w *podWatch) poll(ctx context.Context) (pod.PodStatus, error) {
	s, err := w.r.Status(ctx, w.name)
	if err != nil {
		return s, err
	}
	for _, a := range s.Apps {
		w.report(a)
	}
	w.draw(s)
	return s, nil
}

// draw redraws the block: the pod's phase and age, then a row per app
// with its state, last exit, restarts and the time its run took so far.
func (w *podWatch) draw(s pod.PodStatus) {
	if !w.p.live() {
		return
	}
	now := time.Now()
	since := func(from, to time.Time) string {
		if from.IsZero() {
			return "-"
		}
		if to.IsZero() {
			to = now
		}
		return elapsed(to.Sub(from))
	}
	var rows [][]string
	for _, a := range s.Apps {
		end := a.FinishedAt
		if a.State == pod.AppRestarting {
			end = a.LastExitAt
		}
		rows = append(rows, []string{a.Name, string(a.State), code(a.ExitCode), fmt.Sprint(a.Restarts), since(a.StartedAt, end)})
	}
	var b strings.Builder
	t := &term{w: &b, tty: true, color: w.p.err.color}
	fmt.Fprintf(&b, "pod %s %s, exit code %s, %s\n", s.Name, t.paint(string(s.Phase)), code(s.ExitCode), since(s.StartedAt, s.FinishedAt))
	t.table([]string{"APP", "STATE", "EXIT", "RESTARTS", "ELAPSED"}, rows, 1)
	w.p.draw(strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"))
}

// follow polls until the returned stop is called.
func (w *podWatch) follow(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(podPollInterval)
		defer t.Stop()
		for {
			w.poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// runAttached streams the output of pod m's apps until the pod ends, as
// attach does, with the pod's progress on stderr unless quiet; with
// asJSON the output goes to stderr and the pod's final status to stdout.
// The first of sigs stops the pod; the output and progress go on until
// the pod has ended, and the exit status is then 128 plus the signal's
// number, whatever the pod's exit code. If that stop fails, or a second
// signal comes before it is over, runAttached stops following the pod
// and returns at once, with the same exit status and the reason.
func runAttached(cmd *cobra.Command, r *podrun.Runner, m *pod.Manifest, sigs *interrupts, asJSON, quiet bool) error {
	// The pod's end ends what follows, not the signal that ends the
	// command's context; a stop that fails does.
	base := context.WithoutCancel(cmd.Context())
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	out := cmd.OutOrStdout()
	if asJSON {
		out = cmd.ErrOrStderr()
	}
	p := newProgress(cmd.ErrOrStderr(), out, quiet)
	var w *podWatch
	stop := func() {}
	if p != nil {
		w = &podWatch{p: p, r: r, name: m.Name, seen: map[string]*runsSeen{}}
		stop = w.follow(ctx)
	}
	stopped := stopOnInterrupt(r, m.Name, sigs, cancel)
	err := attach(ctx, r, m, writer(p, out))
	stop()
	if sig, serr := stopped(); sig != 0 {
		err = &exitError{code: 128 + int(sig), err: serr}
	}
	if w != nil {
		// The pod has ended: the last read reports what is left, and the
		// block stays with the final state.
		s, perr := w.poll(base)
		if perr == nil {
			p.event("pod %s %s%s", s.Name, s.Phase, exitText(pod.AppStatus{ExitCode: s.ExitCode}))
		}
	}
	if s, serr := r.Status(base, m.Name); serr == nil {
		noteFromSystemd(cmd.ErrOrStderr(), s)
	}
	if asJSON {
		if perr := printPod(cmd, r, m.Name); perr != nil {
			return perr
		}
	}
	return err
}

// stopOnInterrupt stops pod name, gracefully and in the background, at the
// first of sigs; if that stop fails, or a second signal ends it, it calls
// giveUp. The returned func ends the wait for a signal and returns the
// signal that stopped the pod (0 if none did) and the stop's error.
func stopOnInterrupt(r *podrun.Runner, name string, sigs *interrupts, giveUp func()) func() (syscall.Signal, error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		if sigs.wait(done) == 0 {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		again := make(chan struct{})
		go func() {
			if sigs.next(ctx.Done()) {
				close(again)
				cancel()
			}
		}()
		if _, err = r.Stop(ctx, name, 0); err != nil {
			select {
			case <-again:
				err = fmt.Errorf("interrupted again: pod %s may still be stopping (see unitrun pod status %s)", name, name)
			default:
				err = fmt.Errorf("pod %s: stop: %w", name, err)
			}
			giveUp()
		}
	}()
	return func() (syscall.Signal, error) {
		close(done)
		wg.Wait()
		return sigs.sig, err
	}
}

// interrupts records the first of interruptSignals that unitrun receives.
// One goroutine at a time uses it.
type interrupts struct {
	ch  chan os.Signal
	sig syscall.Signal // the first signal received, once received or wait has seen it
}

// notifyInterrupts starts recording; stop ends it.
func notifyInterrupts() *interrupts {
	i := &interrupts{ch: make(chan os.Signal, 1)}
	signal.Notify(i.ch, interruptSignals...)
	return i
}

func (i *interrupts) stop() { signal.Stop(i.ch) }

// received returns the first signal received so far, or 0.
func (i *interrupts) received() syscall.Signal {
	if i.sig == 0 {
		select {
		case s := <-i.ch:
			i.sig = s.(syscall.Signal)
		default:
		}
	}
	return i.sig
}

// wait waits for the first signal, or until done is closed, and returns
// the signal, or 0.
func (i *interrupts) wait(done <-chan struct{}) syscall.Signal {
	if i.sig == 0 {
		select {
		case s := <-i.ch:
			i.sig = s.(syscall.Signal)
		case <-done:
		}
	}
	return i.sig
}

// next waits for a signal after the first, or until done is closed, and
// reports whether one came.
func (i *interrupts) next(done <-chan struct{}) bool {
	select {
	case <-i.ch:
		return true
	case <-done:
		return false
	}
}

// printPod prints pod name's status, as "pod status --json" does, on
// stdout.
func printPod(cmd *cobra.Command, r *podrun.Runner, name string) error {
	s, err := r.Status(context.Background(), name)
	if err != nil {
		return failed(err)
	}
	return printJSON(cmd.OutOrStdout(), newPodView(s))
}
