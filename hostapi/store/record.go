package store

import "time"

// Record is a job's record as the store keeps it on disk: one JSON line
// per version in the log (the "rec" of a logLine). It is the disk's schema, apart
// from the record the daemon serves: a change of the wire does not change
// the disk unless the conversion (scheduler's Store) changes too, and a
// change of this type is a new schema version (schemaVersion) with a migration.
type Record struct {
	ID             string     `json:"id"`
	Op             string     `json:"op"`
	Args           []string   `json:"args"`
	State          string     `json:"state"` // one of the states of validState
	Unit           string     `json:"unit"`
	InvocationID   string     `json:"invocation_id,omitempty"`
	JobResult      string     `json:"job_result,omitempty"`
	Result         string     `json:"result,omitempty"`
	ExitCode       *int       `json:"exit_code"` // as exit.Exit.JSON writes it; before, null for a signal (exit.ParseExit reads both)
	Signal         string     `json:"signal,omitempty"`
	RebootRequired bool       `json:"reboot_required"`
	CallerUID      uint32     `json:"caller_uid"`
	CallerPID      int32      `json:"caller_pid"`
	CreatedAt      time.Time  `json:"created_at"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	Attempts       int        `json:"attempts,omitempty"`
	BootID         string     `json:"boot_id,omitempty"`
	Key            string     `json:"key,omitempty"`
	Message        string     `json:"message,omitempty"`
	OutputTail     string     `json:"output_tail,omitempty"`
}

// validState reports whether s is one of the five states a record may
// hold: queued, running, succeeded, failed, canceled.
func validState(s string) bool {
	switch s {
	case "queued", "running":
		return true
	}
	return doneState(s)
}

// doneState reports whether s is the state of a job that has ended.
func doneState(s string) bool {
	switch s {
	case "succeeded", "failed", "canceled":
		return true
	}
	return false
}
