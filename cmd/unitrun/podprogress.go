package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
	"github.com/unitrun/unitrun/pod/record"
)

// podPollInterval is how often "pod run" and "pod events" read a pod's
// status for its events.
const podPollInterval = 100 * time.Millisecond

// podWatch turns a pod's status, read again and again, into its events
// (pod.PodEvents): a line each on stderr as progress, and a block with one
// line per app on a terminal, or with --json a JSON object each on stdout.
type podWatch struct {
	p      *progress // nil: no progress
	events io.Writer // nil: no JSON
	r      *podrun.Runner
	name   string
	seen   *pod.PodEvents
}

// poll reads the pod's status, reports what changed and redraws the
// block; a status that cannot be read is left for the next poll.
func (w *podWatch) poll(ctx context.Context) {
	s, err := w.r.Status(ctx, w.name)
	if err != nil {
		return
	}
	for _, e := range w.seen.Next(s, time.Now()) {
		if w.p != nil {
			w.p.event("%s", e)
		}
		if w.events != nil {
			printLine(w.events, e)
		}
	}
	w.draw(s)
}

// draw redraws the block: the pod's phase and age, then a row per app
// with its state, last exit, restarts and the time its run took so far.
func (w *podWatch) draw(s pod.PodStatus) {
	if w.p == nil || !w.p.live() {
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
		if a.State == record.AppRestarting {
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
// asJSON the output goes to stderr and the pod's events, one JSON object
// a line, to stdout.
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
	if p != nil || asJSON {
		w = &podWatch{p: p, r: r, name: m.Name, seen: pod.NewPodEvents(m.Name)}
		if asJSON {
			w.events = cmd.OutOrStdout()
		}
		stop = w.follow(ctx)
	}
	stopped := stopOnInterrupt(r, m.Name, sigs, cancel)
	err := attach(ctx, r, m, writer(p, out))
	stop()
	if sig, serr := stopped(); sig != 0 {
		err = &exitError{code: 128 + int(sig), err: serr}
	}
	if w != nil {
		// The pod has ended: the last read reports what is left, the
		// pod's end among it, and the block stays with the final state.
		w.poll(base)
	}
	if s, serr := r.Status(base, m.Name); serr == nil {
		noteFromSystemd(cmd.ErrOrStderr(), s)
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
	return printJSON(cmd.OutOrStdout(), newPodView(r.StateDir, s))
}
