package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestDaemonRepair damages the records log in the middle (the final record
// of a job that exited 3, intact lines after it): "unitrun daemon" exits
// 125 naming --state-dir, the log, the byte offset and --repair; with
// --repair it serves, and the job reads as failed, outcome unknown.
func TestDaemonRepair(t *testing.T) {
	d := systemdtest.StartDaemon(t, systemdtest.OutcomeOps)
	t.Setenv("UNITRUN_SOCKET", d.API)
	damaged := callJSON(t, "exit", "3")
	callJSON(t, "ok")
	d.Cmd.Process.Signal(syscall.SIGTERM)
	if err := d.Cmd.Wait(); err != nil {
		t.Fatalf("daemon after SIGTERM: %v", err)
	}
	logPath := filepath.Join(d.Dir, "state", "records.log")
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	off := -1
	for i, line := 0, []byte(nil); i < len(data); i += len(line) {
		line = data[i : i+bytes.IndexByte(data[i:], '\n')+1]
		if bytes.Contains(line, []byte(damaged.ID)) && bytes.Contains(line, []byte(`"exit_code":3`)) {
			off = i
		}
	}
	if off < 0 {
		t.Fatalf("no final record of job %s in the log:\n%s", damaged.ID, data)
	}
	data[off] = '#'
	if err := os.WriteFile(logPath, data, 0o600); err != nil {
		t.Fatal(err)
	}

	args := append(d.Args(), "--socket", d.API, "--seqpacket", d.Argv)
	_, errs, code := unitrun(t, args...)
	want := "--state-dir: state dir: " + logPath + ": damaged: the line at byte offset " + strconv.Itoa(off) + " "
	if code != exitFailed || !strings.Contains(errs, want) || !strings.Contains(errs, "--repair") {
		t.Fatalf("daemon on a damaged log: exit %d, %q; want 125 saying %q and --repair", code, errs, want)
	}
	d.Flags = []string{"--repair"}
	d.Start(t)
	out, errs, code := unitrun(t, "op", "status", "--json", damaged.ID)
	if code != 0 || !strings.Contains(out, `"state": "failed"`) || !strings.Contains(out, "outcome unknown") {
		t.Errorf("op status of the damaged job after --repair: exit %d, %q, %q; want failed, outcome unknown", code, out, errs)
	}
}
