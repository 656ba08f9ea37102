package appexec

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/pod/record"
)

// Start is the main process of app a's service in pod: it waits out the
// back-off of a run that follows a restart ([WaitBackoff]), returns an
// error without running anything if the pod is stopping and the app has
// ended for good, records that
// a run of a has started (state running, its start time, and one more
// restart if the run follows one), then pipes its output to the log
// copier, a process that copier starts (see pipeOutput), and executes
// a's command in a's context ([Resolve], [Context.Exec]), which replaces
// this process. It returns only if the command could not be executed: an
// *exec.Error, wrapping exec.ErrNotFound for a command that does not
// exist, whose reason is also left for the exit hook to record with the
// run's exit (record.OpenStartError).
//
// If unknown is not nil, a run whose user or group this process cannot
// resolve ([NamesKnown]) is unknown's, called before anything is
// recorded: the small hook binary has unitrun start it.
//
// The service itself has no User=, Group=, WorkingDirectory= or
// RootDirectory=: systemd 252 applies them to its "+" hooks too, so a user
// that does not resolve or a directory that does not exist would fail the
// hooks that record the run, and the run would end unrecorded.
func Start(stateDir, pod string, a *App, copier []string, unknown func() error) error {
	if err := WaitBackoff(context.Background(), stateDir, pod, a.Name); err != nil {
		return err
	}
	if record.Stopping(stateDir, pod) {
		// The pod is ending (a stop, or its exit policy): a start of an
		// app that has ended for good is no run of the pod, and the app's
		// record is left as it is (record.RecordExit). Any other run goes
		// on to its record, where the stop's signal ends it as a run
		// stopped before its command ran.
		s, err := record.ReadAppOrNew(stateDir, pod, a.Name)
		if err != nil {
			return err
		}
		if s.Ended() {
			return fmt.Errorf("pod %s is stopping and app %s has ended: no run begins", pod, a.Name)
		}
	}
	if unknown != nil && !NamesKnown(a) {
		return unknown()
	}
	// Opened before the credentials change, so that a failure after it
	// is recorded too; the command's exec closes it.
	why, err := record.OpenStartError(stateDir, pod, a.Name)
	if err != nil {
		return err
	}
	defer why.Close()
	if err := beginRun(stateDir, pod, a); err != nil {
		return err
	}
	if a.TerminationMessagePath != "" {
		if err := record.EmptyTerminationFile(stateDir, pod, a.Name); err != nil {
			return err
		}
	}
	err = start(a, copier)
	fmt.Fprintln(why, err.Error())
	return &exec.Error{Name: a.Exec[0], Err: err}
}

// start resolves a's context, pipes the output to the copier and
// executes a's command; it returns why it could not.
func start(a *App, copier []string) error {
	c, err := Resolve(a)
	if err != nil {
		return err
	}
	// After the names resolved, before the chroot: the copier is the
	// host's.
	if err := pipeOutput(copier); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return c.Exec(a.Exec)
}

// WaitBackoff waits out the back-off that app's last exit recorded, if
// that exit was followed by a restart, so that a run that follows a
// restart starts its command once the back-off is over. A stop ends the
// wait without an error: ctx done, or, in Start, which handles no
// signal, systemd's SIGTERM, which ends the process; the stop goes on,
// and the exit hook records that the back-off was no run.
func WaitBackoff(ctx context.Context, stateDir, pod, app string) error {
	if err := record.CheckNames(pod, app); err != nil {
		return err
	}
	s, err := record.ReadAppOrNew(stateDir, pod, app)
	if err != nil || s.State != record.AppRestarting {
		return err
	}
	t := time.NewTimer(time.Until(s.LastExitAt.Add(s.Backoff)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// beginRun records that a run of app a has started: ready at once if a
// has no startup or readiness probe, else once they say so, and an init
// app once it has succeeded; the probes start from this run's start.
func beginRun(stateDir, pod string, a *App) error {
	unlock, err := record.Lock(stateDir, pod)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := record.ReadAppOrNew(stateDir, pod, a.Name)
	if err != nil {
		return err
	}
	if s.State == record.AppRestarting {
		s.Restarts++
	}
	s.State, s.StartedAt, s.FinishedAt = record.AppRunning, time.Now(), time.Time{}
	s.PID = os.Getpid()
	s.Ready = !a.Init && !a.Probed
	s.Startup, s.Readiness = nil, nil
	return record.WriteApp(stateDir, pod, s)
}

// pipeOutput makes the process's stdout and stderr, its log file, a pipe
// to a copier that keeps the log from filling the records' file system
// (package pod/logcopy), started with the command line copier, and
// returns once the copier ignores the stop signals: until then, systemd's
// SIGTERM to what is left of the service once the app has exited would
// end it, and the app is executed only once this returns. The copier is
// one process, started with CLONE_PARENT, so that its parent is the
// service's manager, not this process: it is no child of the app's
// command, which this process becomes (an app that waits for all its
// children would wait for it, and it for the app), and no process in
// between has to start it and exit, which cost each run one more process.
// It runs in a session of its own, in the app's cgroup, until every
// writer of the pipe has closed it.
func pipeOutput(copier []string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer w.Close()
	err = startCopier(copier, r)
	r.Close()
	if err != nil {
		return fmt.Errorf("start the copier of the log: %w", err)
	}
	for _, fd := range []int{1, 2} {
		if err := syscall.Dup3(int(w.Fd()), fd, 0); err != nil {
			return err
		}
	}
	return nil
}

// startCopier starts the copier, argv, reading in, with the process's
// stdout, the app's log, as its own, and waits until it has closed its
// end of a pipe (its fd 3), once it ignores the stop signals.
func startCopier(argv []string, in *os.File) error {
	ready, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer ready.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout = in, os.Stdout
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_PARENT}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return err
	}
	// Not this process's child: its manager reaps it.
	cmd.Process.Release()
	_, err = io.Copy(io.Discard, ready)
	return err
}
