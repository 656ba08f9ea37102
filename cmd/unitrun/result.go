package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit"
	"github.com/unitrun/unitrun/unit/exit"
)

// result is the --json form of a finished run.
type result struct {
	Unit         string     `json:"unit"`
	InvocationID string     `json:"invocation_id,omitempty"`
	JobResult    string     `json:"job_result"`
	Result       string     `json:"result,omitempty"`
	ExitCode     *int       `json:"exit_code"`
	Signal       string     `json:"signal,omitempty"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	Attempts     int        `json:"attempts,omitempty"`
	Restarts     int        `json:"restarts,omitempty"`
	Error        string     `json:"error,omitempty"`
}

func newResult(unitName string, st *job.Status, err error) result {
	r := result{Unit: unitName}
	x := job.Ended(st, err)
	r.ExitCode, r.Signal = x.JSON()
	r.Result = x.Result
	var je *job.JobError
	if errors.As(err, &je) {
		r.JobResult, r.Result = je.Result, je.UnitResult
	}
	if st != nil {
		r.Unit, r.InvocationID, r.JobResult, r.Result, r.Attempts = st.Unit, st.InvocationID, st.JobResult, st.Result, st.Attempts
		r.Restarts = st.Restarts
		if !st.StartedAt.IsZero() {
			t := st.StartedAt
			r.StartedAt = &t
		}
		if !st.FinishedAt.IsZero() {
			t := st.FinishedAt
			r.FinishedAt = &t
		}
	}
	var ee *job.ExitError
	if why := exit.NotExecuted(err); why != nil {
		r.Error = why.Error()
	} else if err != nil && (!errors.As(err, &ee) || ee.ExecError != nil) {
		r.Error = err.Error()
	}
	return r
}

// report prints the outcome (a summary line on stderr unless quiet, or the
// JSON object on stdout) and returns the error unitrun exits with. ctx is
// the command's: if a signal canceled it, the JSON's error names the
// signal, as the message on stderr does.
func report(ctx context.Context, stdout, stderr io.Writer, unitName string, st *job.Status, err error, asJSON, quiet bool) error {
	if ue := tooNew(err); ue != nil {
		// Bad input, found before anything started: no run to report
		// (with --json, main prints {"error"}).
		return ue
	}
	if asJSON {
		sig, told, ok := signalled(ctx, err)
		r := newResult(unitName, st, told)
		if ok {
			// unitrun exits 128+N of the signal that interrupted it,
			// whatever the stopped command ended with: exit_code says
			// the same, as a shell's $? does for a command it ran.
			code := 128 + int(sig)
			r.ExitCode, r.Signal = &code, exit.SignalName(int(sig))
		}
		if e := printLine(stdout, r); e != nil {
			return e
		}
	} else if !quiet && st != nil && st.InvocationID == "" && st.JobResult == "done" {
		// Start of a service that stays up (not waited for), or whose
		// condition was not met: its start job is all there is.
		fmt.Fprintf(stderr, "unitrun: %s: start job done; no run to wait for\n", st.Unit)
	} else if !quiet && st != nil && st.ExecError == nil { // else exitFor tells it
		took := ""
		if !st.StartedAt.IsZero() && !st.FinishedAt.IsZero() {
			took = ", ran " + st.FinishedAt.Sub(st.StartedAt).Round(time.Millisecond).String()
		}
		attempts := ""
		if st.Attempts > 1 {
			attempts = fmt.Sprintf(", %d attempts", st.Attempts)
		}
		if st.Restarts > 0 {
			attempts += fmt.Sprintf(", after %d restarts", st.Restarts)
		}
		fmt.Fprintf(stderr, "unitrun: %s finished: %s%s%s\n", st.Unit, outcome(st), took, attempts)
	}
	return exitFor(err, asJSON)
}

// outcome is the summary line's account of how a run ended: how its
// process ended and systemd's result, once; why a run whose command exited
// 0 failed all the same, or why one that exited non-zero is a success
// (SuccessExitStatus=); and the start job's result where it was not done.
func outcome(st *job.Status) string {
	s := st.How() + ", result " + st.Result
	switch {
	case st.Success() && st.ExitCode != 0:
		s += " (the unit's SuccessExitStatus= lists it)"
	case !st.Success() && st.ExitCode == 0:
		s = st.How() + ", but result " + st.Result + ": systemd counts the run failed"
	}
	if st.JobResult != "done" && st.JobResult != "" {
		s += ", start job " + st.JobResult
	}
	return s
}

// tooNew is the usage error of a -p setting that err says the manager's
// systemd is too old for, or nil.
func tooNew(err error) error {
	var ve *unit.VersionError
	if errors.As(err, &ve) {
		return usageError(fmt.Errorf("--property: %w", ve))
	}
	return nil
}

// failedRunExit is the status unitrun exits with for a run that is not a
// success (a *job.ExitError): the command's own (128+N for signal N). A
// run whose command's own status is 0 failed all the same by systemd's
// Result (a start or RuntimeMaxSec= timeout that the command answered by
// exiting 0, an ExecStopPost= command that failed): it exits 125 where
// its start job failed, as any failed start job does, and 1 otherwise, as
// systemd-run --wait exits; never 0, which would tell a success.
func failedRunExit(st *job.Status) int {
	switch {
	case st.ExitCode != 0:
		return st.ExitCode
	case st.JobResult != "done":
		return exitFailed
	}
	return exitRunFailed
}

// exitFor maps a run's outcome to unitrun's exit status.
func exitFor(err error, printed bool) error {
	if err == nil {
		return nil
	}
	if ue := tooNew(err); ue != nil {
		return ue
	}
	var ee *job.ExitError
	if errors.As(err, &ee) {
		if ee.ExecError != nil && !printed {
			// A command systemd could not execute is told as an
			// error, even with --quiet, as one not found is.
			return &exitError{code: ee.ExitCode, err: err}
		}
		return &exitError{code: failedRunExit(ee.Status)}
	}
	if why := exit.NotExecuted(err); why != nil {
		return &exitError{code: job.Ended(nil, err).ExitCode, err: why}
	}
	if errors.Is(err, context.Canceled) {
		// A signal interrupted unitrun (and, for run and start, it stopped
		// the unit): main exits 128+N of that signal, whatever the unit's
		// own status, which the summary line tells.
		return &exitError{code: exitFailed, err: err}
	}
	if printed {
		return &exitError{code: exitFailed}
	}
	return &exitError{code: exitFailed, err: err}
}
