package api

import "time"

// State is where a job is in its life.
type State string

const (
	StateQueued    State = "queued"    // accepted, waiting for its turn
	StateRunning   State = "running"   // its unit was started
	StateSucceeded State = "succeeded" // it ended with success
	StateFailed    State = "failed"    // it ended otherwise, or never ran
	StateCanceled  State = "canceled"  // a caller canceled it
)

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	switch s {
	case StateQueued, StateRunning, StateSucceeded, StateFailed, StateCanceled:
		return true
	}
	return false
}

// Record is the record of one job as the daemon serves it: the body of
// the HTTP API's job answers, and what the client returns.
type Record struct {
	ID             string     `json:"id"`
	Op             string     `json:"op"`
	Args           []string   `json:"args"`
	State          State      `json:"state"`
	Unit           string     `json:"unit"`
	InvocationID   string     `json:"invocation_id,omitempty"`
	JobResult      string     `json:"job_result,omitempty"` // result of the start job: done, failed, canceled, timeout, ...
	Result         string     `json:"result,omitempty"`     // the service's Result: success, exit-code, signal, timeout, ...
	ExitCode       *int       `json:"exit_code"`            // the shell's status: 128+N for signal N, 126/127 if it could not be executed; nil if no process ran (exit.Exit.JSON)
	Signal         string     `json:"signal,omitempty"`     // the signal that killed the main process, such as "TERM"
	RebootRequired bool       `json:"reboot_required"`
	CallerUID      uint32     `json:"caller_uid"`
	CallerPID      int32      `json:"caller_pid"`
	CreatedAt      time.Time  `json:"created_at"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	Attempts       int        `json:"attempts,omitempty"`
	BootID         string     `json:"boot_id,omitempty"` // the host's boot the job started in
	Key            string     `json:"key,omitempty"`     // the caller's idempotency key, if the call had one
	Message        string     `json:"message,omitempty"`
	OutputTail     string     `json:"output_tail,omitempty"`
}

// Done reports whether the job has ended: succeeded, failed or canceled.
func (r *Record) Done() bool {
	switch r.State {
	case StateSucceeded, StateFailed, StateCanceled:
		return true
	}
	return false
}
