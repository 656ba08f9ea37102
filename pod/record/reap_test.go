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
