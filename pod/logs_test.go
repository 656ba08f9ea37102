package pod

import (
	"bytes"
	"context"
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
	if err := os.MkdirAll(filepath.Join(Dir(state, "web"), logsDir), 0o755); err != nil {
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
