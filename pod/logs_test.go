package pod

import (
	"bytes"
	"context"
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLogsBeforeFirstStart follows the logs of a pod whose app has not
// started yet, so that systemd has not created its log file: nothing is
// printed until the file appears, then its lines are, prefixed.
func TestLogsBeforeFirstStart(t *testing.T) {
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(record.Dir(state, "web"), record.LogsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Logs(context.Background(), state, "web", []string{"server"}, &out, LogOptions{Prefix: true}, nil); err != nil || out.Len() != 0 {
		t.Fatalf("no log file yet: %q, %v; want nothing, no error", out.String(), err)
	}
	go func() {
		time.Sleep(3 * pollInterval)
		tmp := LogFile(state, "web", "server") + ".tmp"
		os.WriteFile(tmp, []byte("up\npartial"), 0o644)
		os.Rename(tmp, LogFile(state, "web", "server"))
	}()
	deadline := time.Now().Add(10 * time.Second)
	done := func() bool {
		_, err := os.Stat(LogFile(state, "web", "server"))
		return err == nil || time.Now().After(deadline)
	}
	if err := Logs(context.Background(), state, "web", []string{"server"}, &out, LogOptions{Prefix: true, Follow: true}, done); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "server | up\nserver | partial\n"; got != want {
		t.Errorf("followed %q, want %q", got, want)
	}
	if err := Logs(context.Background(), state, "db", []string{"a"}, &out, LogOptions{Prefix: true}, nil); err == nil {
		t.Error("logs of a pod that does not exist: no error")
	}
}

// TestLogsAcrossSegments reads a log kept in segments as logcopy rotates
// it: run 0 whole in one segment, run 1 whose first part was removed
// (its kept part begins without a run's mark), its rest in the live log.
// The kept runs read as one stream, a run's last line without a newline
// ended, the log's not; --previous gives run 0, whose mark was kept, as
// written; --tail and
// --timestamps cross the files.
func TestLogsAcrossSegments(t *testing.T) {
	state := t.TempDir()
	logs := filepath.Join(record.Dir(state, "web"), record.LogsDir)
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	live := LogFile(state, "web", "a")
	write := func(path, log, times string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(logcopy.Times(path), []byte(times), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(logs, "a.0.0.log"), "zero\nend", "r 0 1000000000\nw 0 1000000000\n")
	write(filepath.Join(logs, "a.1.1.log"), "one b\n", "w 0 3000000000\n")
	write(live, "one c\n", "w 0 4000000000\n")
	read := func(o LogOptions) string {
		t.Helper()
		var out bytes.Buffer
		if err := Logs(context.Background(), state, "web", []string{"a"}, &out, o, nil); err != nil {
			t.Fatalf("logs %+v: %v", o, err)
		}
		return out.String()
	}
	if got, want := read(LogOptions{}), "zero\nend\none b\none c\n"; got != want {
		t.Errorf("logs: %q, want %q", got, want)
	}
	if got, want := read(LogOptions{Previous: true}), "zero\nend"; got != want {
		t.Errorf("logs --previous: %q, want %q", got, want)
	}
	// The log's last line without a newline: as written, with
	// --timestamps too, and ended only where another app's follows.
	write(live, "one c\none d", "w 0 4000000000\n")
	if got, want := read(LogOptions{}), "zero\nend\none b\none c\none d"; got != want {
		t.Errorf("logs ending without a newline: %q, want %q", got, want)
	}
	if got, want := read(LogOptions{Tail: 1, Timestamps: true}), "1970-01-01T00:00:04Z one d"; got != want {
		t.Errorf("logs --tail 1 --timestamps ending without a newline: %q, want %q", got, want)
	}
	if got, want := read(LogOptions{Tail: 1, Prefix: true}), "a | one d\n"; got != want {
		t.Errorf("logs of every app ending without a newline: %q, want %q", got, want)
	}
	write(live, "one c\n", "w 0 4000000000\n")
	if got, want := read(LogOptions{Tail: 2, Timestamps: true}), "1970-01-01T00:00:03Z one b\n1970-01-01T00:00:04Z one c\n"; got != want {
		t.Errorf("logs --tail 2 --timestamps: %q, want %q", got, want)
	}
}
