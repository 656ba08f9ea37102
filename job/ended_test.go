package job

import (
	"syscall"
	"testing"
	"time"
)

// Ended writes a run's end as every JSON face does: an exit code only for
// a process that exited, a signal as systemd names it, and neither for a
// run that had no process.
func TestStatusEnded(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name   string
		st     Status
		code   int // -1: null
		signal string
	}{
		{"exited", Status{JobResult: "done", ExitCode: 4, FinishedAt: now}, 4, ""},
		{"success", Status{JobResult: "done"}, 0, ""},
		{"killed", Status{JobResult: "done", ExitCode: -1, Signal: syscall.SIGKILL, FinishedAt: now}, -1, "KILL"},
		{"real-time", Status{JobResult: "done", ExitCode: -1, Signal: syscall.Signal(37)}, -1, "RTMIN+3"},
		{"exec failed", Status{JobResult: "failed", ExitCode: 203, FinishedAt: now}, 203, ""},
		{"never ran", Status{JobResult: "failed"}, -1, ""},
		{"canceled before it ran", Status{JobResult: "canceled"}, -1, ""},
	} {
		code, signal := tt.st.Ended()
		got := -1
		if code != nil {
			got = *code
		}
		if got != tt.code || signal != tt.signal {
			t.Errorf("%s: Ended() = %d, %q; want %d, %q (-1: null)", tt.name, got, signal, tt.code, tt.signal)
		}
	}
	if got := SignalName(syscall.SIGKILL); got != "SIGKILL" {
		t.Errorf("SignalName(SIGKILL) = %q, want SIGKILL", got)
	}
}
