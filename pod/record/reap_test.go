package record

import (
	"testing"
)

// A first run that ended before its command ran, with no main process
// (its ExecStartPre= hook ran, and no $EXIT_CODE): the stop's SIGTERM,
// 143, when a signal ended the hook or the hook ended at the stop's
// signal, 255 when the hook failed; failed either way.
func TestRecordExitBeforeStartHook(t *testing.T) {
	for _, c := range []struct {
		result string
		code   int
		signal string
	}{
		{"signal", 143, "TERM"},
		{"success", 143, "TERM"},
		{"exit-code", NoProcessCode, ""},
	} {
		dir := t.TempDir()
		p := &Policy{Pod: "p", ExitPolicy: FirstFailure, Apps: []AppPolicy{{Name: "a", RestartPolicy: Never}}}
		if err := WriteApp(dir, "p", AppStatus{Name: "a", State: AppWaiting}); err != nil {
			t.Fatal(err)
		}
		if _, err := RecordExit(dir, "p", "a", p, HookEnv{ServiceResult: c.result, InvocationID: "x"}, nil); err != nil {
			t.Fatal(err)
		}
		s, err := ReadApp(dir, "p", "a")
		if err != nil {
			t.Fatal(err)
		}
		if s.State != AppFailed || s.ExitCode == nil || *s.ExitCode != c.code || s.Signal != c.signal || s.Message != notRun {
			t.Errorf("SERVICE_RESULT %s, no EXIT_CODE: %+v; want failed, %d, signal %q, %q", c.result, s, c.code, c.signal, notRun)
		}
		if code, err := ReadExitCode(dir, "p", "a"); err != nil || code != c.code {
			t.Errorf("SERVICE_RESULT %s, no EXIT_CODE: status file %d, %v; want %d", c.result, code, err, c.code)
		}
	}
}

// An init app's ExecStopPost= after its command exited: a result other
// than success with an exit that did not fail (a stop killed the
// ExecStartPost= that records the success, or it timed out) is the
// command's success; a command that failed stays a failure.
func TestRecordExitInitAppHookCutShort(t *testing.T) {
	for _, c := range []struct {
		result, status string
		state          AppState
		code           int
		wantResult     string
	}{
		{"signal", "0", AppExited, 0, "success"},
		{"timeout", "0", AppExited, 0, "success"},
		{"exit-code", "0", AppExited, 0, "success"},
		{"exit-code", "3", AppFailed, 3, "exit-code"},
	} {
		dir := t.TempDir()
		p := &Policy{Pod: "p", ExitPolicy: FirstFailure, Apps: []AppPolicy{{Name: "init", RestartPolicy: Never, Init: true}}}
		if err := WriteApp(dir, "p", AppStatus{Name: "init", State: AppRunning}); err != nil {
			t.Fatal(err)
		}
		env := HookEnv{ServiceResult: c.result, ExitCode: "exited", ExitStatus: c.status, InvocationID: "x"}
		if _, err := RecordExit(dir, "p", "init", p, env, nil); err != nil {
			t.Fatal(err)
		}
		s, err := ReadApp(dir, "p", "init")
		if err != nil {
			t.Fatal(err)
		}
		if s.State != c.state || s.ExitCode == nil || *s.ExitCode != c.code || s.Result != c.wantResult || s.Signal != "" {
			t.Errorf("SERVICE_RESULT %s, exited %s: %+v; want %s, %d, %s", c.result, c.status, s, c.state, c.code, c.wantResult)
		}
	}
}
