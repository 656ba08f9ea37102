package provider

import (
	"testing"
	"time"
)

// A container's terminated state reads an app's exit as every face of
// unitrun writes it (unit.Exit): the exit code as recorded (128+N for
// signal N, as container runtimes report it) and the signal's number from
// its name as systemd writes it, real-time signals included.
func TestTerminatedFromExit(t *testing.T) {
	now := time.Now()
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		name   string
		app    appState
		code   int32
		signal int32
		reason string
	}{
		{"exit 0", appState{ExitCode: code(0), Result: "success"}, 0, 0, "Completed"},
		{"exit 3", appState{ExitCode: code(3), Result: "exit-code"}, 3, 0, "Error"},
		{"kill -9", appState{ExitCode: code(137), Signal: "KILL", Result: "signal"}, 137, 9, "Error"},
		{"RTMIN+3", appState{ExitCode: code(165), Signal: "RTMIN+3", Result: "signal"}, 165, 37, "Error"},
		{"oom-kill", appState{ExitCode: code(137), Signal: "KILL", Result: "oom-kill"}, 137, 9, "OOMKilled"},
		{"exec format error", appState{ExitCode: code(126), Result: "exit-code", Message: "command /x: exec format error"}, 126, 0, "StartError"},
	} {
		got := terminated(tc.app, now, now)
		if got == nil || got.ExitCode != tc.code || got.Signal != tc.signal || got.Reason != tc.reason || got.Message != tc.app.Message {
			t.Errorf("%s: terminated = %+v; want exit code %d, signal %d, reason %s", tc.name, got, tc.code, tc.signal, tc.reason)
		}
	}
	if got := terminated(appState{State: "running"}, now, now); got != nil {
		t.Errorf("no exit recorded: terminated = %+v; want nil", got)
	}
}
