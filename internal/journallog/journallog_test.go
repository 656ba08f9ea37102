package journallog

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

func TestHandlerFields(t *testing.T) {
	j := systemdtest.ListenJournal(t)
	h, err := New(j.Path, Options{Level: slog.LevelInfo, Identifier: "unitrun"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(h).With("op", "echo")
	log.Debug("not sent")
	log.Info("job started", "job_id", "20261202T142501Z-0123abcd", "unit", "u.service", "caller_uid", 1000, "_hidden", "x", "9lives", "x")
	got := j.Next(t)
	want := map[string]string{
		"MESSAGE": "job started", "PRIORITY": "6", "SYSLOG_IDENTIFIER": "unitrun",
		"OP": "echo", "JOB_ID": "20261202T142501Z-0123abcd", "UNIT": "u.service", "CALLER_UID": "1000",
	}
	if !equal(got, want) {
		t.Errorf("entry %v, want %v (the debug entry is not sent, keys starting with _ or a digit are dropped)", got, want)
	}

	log.WithGroup("outcome").Warn("two\nlines", "exit-code", 3, slog.Group("unit", "result", "exit-code"))
	got = j.Next(t)
	want = map[string]string{
		"MESSAGE": "two\nlines", "PRIORITY": "4", "SYSLOG_IDENTIFIER": "unitrun",
		"OP": "echo", "OUTCOME_EXIT_CODE": "3", "OUTCOME_UNIT_RESULT": "exit-code",
	}
	if !equal(got, want) {
		t.Errorf("entry %v, want %v", got, want)
	}

	big := strings.Repeat("x", 1<<19) // larger than a datagram may be
	log.Error(big)
	got = j.Next(t)
	if got["MESSAGE"] != big || got["PRIORITY"] != "3" {
		t.Errorf("large entry: MESSAGE of %d bytes, PRIORITY %q; want %d bytes and 3", len(got["MESSAGE"]), got["PRIORITY"], len(big))
	}
}

func TestHandlerNoJournal(t *testing.T) {
	h, err := New(filepath.Join(t.TempDir(), "none"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(t.Context(), slog.Record{Message: "x"}); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("Handle with no journal: %v, want an error naming the socket", err)
	}
	var text strings.Builder
	h, err = New(filepath.Join(t.TempDir(), "none"), Options{Fallback: slog.NewTextHandler(&text, nil)})
	if err != nil {
		t.Fatal(err)
	}
	slog.New(h).With("op", "echo").WithGroup("g").Info("lost?", "k", 1)
	if got := text.String(); !strings.Contains(got, `msg=lost? op=echo g.k=1`) {
		t.Errorf("fallback got %q, want the record with its attributes and group", got)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestHandlerJournald sends entries, one too large for a datagram, to a
// real systemd-journald, from this test binary run on its journal stream.
func TestHandlerJournald(t *testing.T) {
	if os.Getenv("JOURNALLOG_SEND") != "" {
		h, err := New(DefaultSocket, Options{Identifier: "journallog-test"})
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(h)
		log.Info("two\nlines", "job_id", "j1")
		if err := h.Handle(t.Context(), slog.NewRecord(time.Now(), slog.LevelWarn, strings.Repeat("x", 1<<19), 0)); err != nil {
			t.Fatal(err)
		}
		return
	}
	j := systemdtest.NewJournald(t)
	argv := append(j.Wrap(), os.Args[0], "-test.run=^TestHandlerJournald$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "JOURNALLOG_SEND=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sender: %v\n%s", err, out)
	}
	got := j.Entries(t, 2, "SYSLOG_IDENTIFIER=journallog-test")
	if len(got) != 2 || got[0]["MESSAGE"] != "two\nlines" || got[0]["JOB_ID"] != "j1" || got[0]["PRIORITY"] != "6" || got[0]["_TRANSPORT"] != "journal" {
		t.Fatalf("entries %v, want the two-line entry with JOB_ID=j1 first", got)
	}
	if big, _ := got[1]["MESSAGE"].(string); len(big) != 1<<19 || got[1]["PRIORITY"] != "4" {
		t.Errorf("large entry: MESSAGE of %d bytes, PRIORITY %v; want %d bytes and 4", len(big), got[1]["PRIORITY"], 1<<19)
	}
}
