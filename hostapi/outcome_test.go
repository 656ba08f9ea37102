package hostapi

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// formatOutcome writes o as the ExecStopPost= command does.
func formatOutcome(o Outcome) []byte {
	return []byte("SERVICE_RESULT=" + o.ServiceResult + "\nEXIT_CODE=" + o.ExitCode + "\nEXIT_STATUS=" + o.ExitStatus + "\n")
}

func TestParseOutcome(t *testing.T) {
	tests := []struct {
		in      string
		want    Outcome
		wantErr string
	}{
		{"SERVICE_RESULT=success\nEXIT_CODE=exited\nEXIT_STATUS=0\n", Outcome{"success", "exited", "0"}, ""},
		{"SERVICE_RESULT=exit-code\nEXIT_CODE=exited\nEXIT_STATUS=255\n", Outcome{"exit-code", "exited", "255"}, ""},
		{"SERVICE_RESULT=success\nEXIT_CODE=killed\nEXIT_STATUS=TERM\n", Outcome{"success", "killed", "TERM"}, ""},
		{"SERVICE_RESULT=core-dump\nEXIT_CODE=dumped\nEXIT_STATUS=SEGV\n", Outcome{"core-dump", "dumped", "SEGV"}, ""},
		{"SERVICE_RESULT=signal\nEXIT_CODE=killed\nEXIT_STATUS=RTMIN+3\n", Outcome{"signal", "killed", "RTMIN+3"}, ""},
		{"SERVICE_RESULT=protocol\nEXIT_CODE=\nEXIT_STATUS=\n", Outcome{"protocol", "", ""}, ""},
		{"SERVICE_RESULT=start-limit-hit\nEXIT_CODE=\nEXIT_STATUS=\n", Outcome{"start-limit-hit", "", ""}, ""},
		{"", Outcome{}, "does not end with a newline"},
		{"SERVICE_RESULT=success\nEXIT_CODE=exited\nEXIT_STATUS=0", Outcome{}, "does not end with a newline"},
		{"SERVICE_RESULT=success\nEXIT_CODE=exited\n", Outcome{}, "2 lines, want 3"},
		{"SERVICE_RESULT=success\nEXIT_CODE=exited\nEXIT_STATUS=0\n\n", Outcome{}, "4 lines, want 3"},
		{"EXIT_CODE=exited\nSERVICE_RESULT=success\nEXIT_STATUS=0\n", Outcome{}, "line 1: want SERVICE_RESULT="},
		{"SERVICE_RESULT=success\r\nEXIT_CODE=exited\nEXIT_STATUS=0\n", Outcome{}, `SERVICE_RESULT "success\r" is not a service result`},
		{"SERVICE_RESULT=\nEXIT_CODE=\nEXIT_STATUS=\n", Outcome{}, `SERVICE_RESULT "" is not a service result`},
		{"SERVICE_RESULT=success\nEXIT_CODE=exited\nEXIT_STATUS=256\n", Outcome{}, `EXIT_STATUS "256" is not an exit status 0 to 255`},
		{"SERVICE_RESULT=success\nEXIT_CODE=exited\nEXIT_STATUS=07\n", Outcome{}, `EXIT_STATUS "07" is not an exit status 0 to 255`},
		{"SERVICE_RESULT=success\nEXIT_CODE=exited\nEXIT_STATUS=TERM\n", Outcome{}, `EXIT_STATUS "TERM" is not an exit status 0 to 255`},
		{"SERVICE_RESULT=signal\nEXIT_CODE=killed\nEXIT_STATUS=sigterm\n", Outcome{}, `EXIT_STATUS "sigterm" is not a signal name`},
		{"SERVICE_RESULT=signal\nEXIT_CODE=killed\nEXIT_STATUS=\n", Outcome{}, `EXIT_STATUS "" is not a signal name`},
		{"SERVICE_RESULT=success\nEXIT_CODE=\nEXIT_STATUS=0\n", Outcome{}, `EXIT_STATUS "0" without EXIT_CODE`},
		{"SERVICE_RESULT=success\nEXIT_CODE=stopped\nEXIT_STATUS=0\n", Outcome{}, `EXIT_CODE "stopped" is not "exited", "killed" or "dumped"`},
		{strings.Repeat("x", 600), Outcome{}, "longer than 512 bytes"},
	}
	for _, tt := range tests {
		got, err := parseOutcome([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("parseOutcome(%q): err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseOutcome(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestReadOutcome(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateRunning, time.Now())
	if _, ok, err := s.ReadOutcome(r.ID); ok || err != nil {
		t.Errorf("ReadOutcome before the unit stopped = %v, %v; want false, nil", ok, err)
	}
	if err := os.WriteFile(s.OutcomePath(r.ID), formatOutcome(Outcome{"signal", "killed", "KILL"}), 0o600); err != nil {
		t.Fatal(err)
	}
	o, ok, err := s.ReadOutcome(r.ID)
	if !ok || err != nil || o != (Outcome{"signal", "killed", "KILL"}) {
		t.Errorf("ReadOutcome = %+v, %v, %v", o, ok, err)
	}
	if err := os.WriteFile(s.OutcomePath(r.ID), []byte("SERVICE_RESULT=success\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ReadOutcome(r.ID); ok || err == nil || !strings.Contains(err.Error(), "job "+r.ID+": outcome: 1 lines, want 3") {
		t.Errorf("ReadOutcome of a short file = %v, %v", ok, err)
	}
	if _, _, err := s.ReadOutcome("20261202T142501Z-0123abcd"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadOutcome of a missing job: err = %v, want ErrNotFound", err)
	}
}

// FuzzReadOutcome checks that ReadOutcome never panics and that what it
// accepts is exactly the file the ExecStopPost= command would write.
func FuzzReadOutcome(f *testing.F) {
	f.Add(formatOutcome(Outcome{"success", "exited", "0"}))
	f.Add(formatOutcome(Outcome{"signal", "killed", "RTMIN+3"}))
	f.Add(formatOutcome(Outcome{"protocol", "", ""}))
	f.Add([]byte("SERVICE_RESULT=success\n"))
	s, err := OpenStore(filepath.Join(f.TempDir(), "state"))
	if err != nil {
		f.Fatal(err)
	}
	id := s.NewID()
	if err := s.Put(&Record{ID: id, Op: "x", State: StateRunning}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(s.OutcomePath(id), data, 0o600); err != nil {
			t.Fatal(err)
		}
		o, ok, err := s.ReadOutcome(id)
		if err != nil || !ok {
			return
		}
		if got := formatOutcome(o); string(got) != string(data) {
			t.Fatalf("accepted %q as %+v, which formats as %q", data, o, got)
		}
	})
}

func TestOutcomeCommandRefuses(t *testing.T) {
	for _, p := range []string{
		"outcome", "/a/../outcome", "/a//outcome", "/a/b/",
		"/st$ate/outcome", "/a;b/outcome", "/a/out come", "/a/-outcome", "/a/out'come", "/a/.outcome",
	} {
		if argv, err := OutcomeCommand(p); err == nil {
			t.Errorf("OutcomeCommand(%q) = %q, want an error", p, argv)
		}
	}
}

// TestOutcomeCommandWrites runs the command as systemd would, with the
// environment of an ExecStopPost= process, in a directory whose name needs
// quoting in a shell.
func TestOutcomeCommandWrites(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), `st ate "q" 'x' %n \ *`))
	if err != nil {
		t.Fatal(err)
	}
	r := putRecord(t, s, StateRunning, time.Now())
	argv, err := OutcomeCommand(s.OutcomePath(r.ID))
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range argv {
		if strings.ContainsAny(w, "$;") {
			t.Errorf("argv[%d] = %q holds '$' or ';'", i, w)
		}
	}
	tests := []struct {
		env  []string
		want Outcome
	}{
		{[]string{"SERVICE_RESULT=exit-code", "EXIT_CODE=exited", "EXIT_STATUS=7"}, Outcome{"exit-code", "exited", "7"}},
		{[]string{"SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL"}, Outcome{"signal", "killed", "KILL"}},
		{[]string{"SERVICE_RESULT=protocol"}, Outcome{"protocol", "", ""}},
	}
	for _, tt := range tests {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, tt.env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", argv, err, out)
		}
		o, ok, err := s.ReadOutcome(r.ID)
		if !ok || err != nil || o != tt.want {
			t.Errorf("env %q: ReadOutcome = %+v, %v, %v; want %+v", tt.env, o, ok, err, tt.want)
		}
		fi, err := os.Stat(s.OutcomePath(r.ID))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("outcome file: %v, %v; want mode 0600", fi.Mode(), err)
		}
	}
	entries, _ := os.ReadDir(s.Dir(r.ID))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("the command left %s", e.Name())
		}
	}
	// Once the daemon has recorded the job, the command writes nothing.
	os.Remove(s.OutcomePath(r.ID))
	if err := s.markRecorded(r.ID); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, tests[0].env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, out)
	}
	if _, ok, err := s.ReadOutcome(r.ID); ok || err != nil {
		t.Errorf("recorded job: outcome written (%v, %v), want none", ok, err)
	}
}
