package journallog

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

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
