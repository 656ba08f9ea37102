package api

import (
	"regexp"
	"sync"
)

// OpInfo is how GET /v1/ops describes an op.
type OpInfo struct {
	Name        string `json:"name"`
	Unit        string `json:"unit,omitempty"`
	ArgsMin     int    `json:"args_min"`
	ArgsMax     int    `json:"args_max"`
	ArgsPattern string `json:"args_pattern,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
	Exclusive   bool   `json:"exclusive"`
	Allowed     bool   `json:"allowed"`
	// OnDisconnect is what happens to a job whose waiting caller goes
	// away: "continue" or "stop" (the op's on_disconnect).
	OnDisconnect string `json:"on_disconnect"`
}

// CallRequest is the body of POST /v1/ops/{name}.
type CallRequest struct {
	// Args are the caller's args for the op; absent means none.
	Args []string `json:"args"`
	// Wait asks for the response once the job has ended, with its final
	// record; false (the default) answers 202 Accepted with the job's id as
	// soon as the job is accepted.
	Wait bool `json:"wait"`
	// Key, if not empty, makes the call idempotent: a call of the same op
	// by the same uid with the same key gets the job the first one
	// started, as long as its record is kept, instead of a new job. It
	// must match [KeyPattern].
	Key string `json:"key,omitempty"`
}

// PreferEarlyID is the preference a call with Wait may send in its
// request header "Prefer" (RFC 7240) to learn the job's id before the job
// ends: the daemon then answers "103 Early Hints" with the header Location
// /v1/jobs/{id} as soon as the job is accepted, and the final record on
// the same connection once it has ended. The connection is the waiting
// caller's from the start, for the op's on_disconnect.
const PreferEarlyID = "early-id"

// KeyPattern is the form of a call's idempotency key.
const KeyPattern = `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`

// keyRE is KeyPattern, compiled on first use.
var keyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(KeyPattern) })

// ValidKey reports whether key matches KeyPattern.
func ValidKey(key string) bool { return keyRE().MatchString(key) }
