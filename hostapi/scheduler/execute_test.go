package scheduler

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/unit/exit"
)

var exitFromMain = exit.ExitFromMain

// TestFromStatus checks the record of each way a run ends: an exit code
// only for a process that exited, whatever the start job's result, and a
// message that names the job's result when no process ended.
func TestFromStatus(t *testing.T) {
	now := time.Now()
	const unit = "unitrun-x.service"
	tests := []struct {
		name     string
		st       *job.Status
		err      error
		state    api.State
		exitCode int // -1: none
		signal   string
		message  string
	}{
		{"success", &job.Status{Unit: unit, JobResult: "done", Exit: exitFromMain(1, 0, "success"), FinishedAt: now}, nil, api.StateSucceeded, 0, "", "exit status 0"},
		{"SuccessExitStatus=7", &job.Status{Unit: unit, JobResult: "done", Exit: exitFromMain(1, 7, "success"), SuccessListed: true, FinishedAt: now}, nil, api.StateSucceeded, 7, "", "exit status 7"},
		{"exit 3", &job.Status{Unit: unit, JobResult: "done", Exit: exitFromMain(1, 3, "exit-code"), FinishedAt: now}, &job.ExitError{}, api.StateFailed, 3, "", "exit status 3"},
		{"SIGTERM", &job.Status{Unit: unit, JobResult: "done", Exit: exitFromMain(2, 15, "success"), FinishedAt: now}, &job.ExitError{}, api.StateFailed, 143, "TERM", "signal: SIGTERM"},
		{"exec failed while starting", &job.Status{Unit: unit, JobResult: "failed", Exit: exitFromMain(1, 203, "exit-code"), FinishedAt: now}, &job.ExitError{}, api.StateFailed, 126, "", "cannot execute: systemd exit status 203/EXEC, the unit's journal says why (exit status 126)"},
		{"start job canceled before any exit", &job.Status{Unit: unit, JobResult: "canceled", Exit: exitFromMain(0, 0, "success"), MainPID: 42}, &job.JobError{Unit: unit, Result: "canceled"}, api.StateFailed, -1, "", "job for unitrun-x.service: canceled"},
		{"command not found", nil, &exec.Error{Name: "/nonexistent", Err: exec.ErrNotFound}, api.StateFailed, 127, "", "/nonexistent: command not found"},
		{"not executable", nil, &exec.Error{Name: "/etc/passwd", Err: errors.New("permission denied")}, api.StateFailed, 126, "", "/etc/passwd: cannot execute: permission denied"},
		{"no status", nil, errors.New("start: no manager"), api.StateFailed, -1, "", "start: no manager"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ee, ok := tt.err.(*job.ExitError); ok {
				ee.Status = tt.st
			}
			r := &api.Record{}
			fromStatus(tt.st, tt.err)(r)
			code := -1
			if r.ExitCode != nil {
				code = *r.ExitCode
			}
			if r.State != tt.state || code != tt.exitCode || r.Signal != tt.signal || r.Message != tt.message {
				t.Errorf("state %s, exit code %d, signal %q, message %q; want %s, %d, %q, %q",
					r.State, code, r.Signal, r.Message, tt.state, tt.exitCode, tt.signal, tt.message)
			}
			if _, ok := tt.err.(*exec.Error); ok && r.Result != "exit-code" {
				t.Errorf("result %q, want exit-code, as systemd gives for a command it cannot execute", r.Result)
			}
			if tt.st != nil && tt.st.JobResult == "canceled" && r.JobResult != "canceled" {
				t.Errorf("job_result %q, want canceled", r.JobResult)
			}
		})
	}
}
