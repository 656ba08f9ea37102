package scheduler

import (
	"testing"

	"github.com/unitrun/unitrun/hostapi/store"
)

// A record stored before exit_code was set for a signal (exit_code null,
// signal "KILL") is served as one stored today: exit_code 137 beside the
// signal, as every face writes it; others are served as stored.
func TestFromDiskOldSignalRecord(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		name       string
		exitCode   *int
		signal     string
		wantCode   int // -1: null
		wantSignal string
	}{
		{"old signal", nil, "KILL", 137, "KILL"},
		{"signal", code(137), "KILL", 137, "KILL"},
		{"exit 3", code(3), "", 3, ""},
		{"never ran", nil, "", -1, ""},
	} {
		r := fromDisk(&store.Record{ID: "x", State: "failed", Result: "signal", ExitCode: tc.exitCode, Signal: tc.signal})
		got := -1
		if r.ExitCode != nil {
			got = *r.ExitCode
		}
		if got != tc.wantCode || r.Signal != tc.wantSignal {
			t.Errorf("%s: exit_code %d, signal %q; want %d, %q (-1: null)", tc.name, got, r.Signal, tc.wantCode, tc.wantSignal)
		}
	}
}
