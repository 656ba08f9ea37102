package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// callJSON runs "unitrun op call --json" and returns the final record.
func callJSON(t *testing.T, args ...string) api.Record {
	t.Helper()
	out, errs, _ := unitrun(t, append([]string{"op", "call", "--json"}, args...)...)
	var rec api.Record
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.ID == "" {
		t.Fatalf("op call %q: %q (%v), stderr %q", args, out, err, errs)
	}
	return rec
}

// expectEntry reads the next journal entry and checks that it has the
// fields of want ("NAME=value" pairs) and a MESSAGE holding msg.
func expectEntry(t *testing.T, j *systemdtest.Journal, msg string, want ...string) {
	t.Helper()
	got := j.Next(t)
	if !strings.Contains(got["MESSAGE"], msg) {
		t.Errorf("journal entry %v: want MESSAGE holding %q", got, msg)
	}
	for _, w := range want {
		name, value, _ := strings.Cut(w, "=")
		if got[name] != value {
			t.Errorf("journal entry %v: want %s", got, w)
		}
	}
}

// journalDaemon returns a daemon, not started, whose stderr is a file
// that JOURNAL_STREAM names, as systemd sets up a service whose output
// goes to the journal, and which sends its entries to journalSocket.
func journalDaemon(t *testing.T, journalSocket string) (*systemdtest.Daemon, *os.File) {
	t.Helper()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stderr.Close() })
	var st syscall.Stat_t
	if err := syscall.Fstat(int(stderr.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	d := systemdtest.NewDaemon(t, systemdtest.OutcomeOps)
	d.Flags = []string{"--journal-socket", journalSocket}
	d.Env = []string{fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino)}
	d.Stderr = stderr
	return d, stderr
}

// TestDaemonLogJournalGone runs the daemon on the journal stream with no
// journal socket (journald stopped): entries go to stderr as text.
func TestDaemonLogJournalGone(t *testing.T) {
	d, stderr := journalDaemon(t, filepath.Join(t.TempDir(), "no-journal"))
	d.Start(t)
	t.Setenv("UNITRUN_SOCKET", d.API)
	failed := callJSON(t, "exit", "3")
	if b, _ := os.ReadFile(stderr.Name()); !strings.Contains(string(b), "level=WARN") || !strings.Contains(string(b), "job_id="+failed.ID) {
		t.Errorf("stderr %q: want the failed job's entry as text", b)
	}
}

// TestDaemonLogJournal runs the daemon with a stderr that JOURNAL_STREAM
// names, as systemd sets up a service whose output goes to the journal:
// it must send native entries, with the job's fields, to the journal
// socket, and write nothing to stderr.
func TestDaemonLogJournal(t *testing.T) {
	j := systemdtest.ListenJournal(t)
	d, stderr := journalDaemon(t, j.Path)
	d.Flags = append(d.Flags, "--log-level", "debug")
	d.Start(t)
	t.Setenv("UNITRUN_SOCKET", d.API)
	expectEntry(t, j, fmt.Sprintf(": %d ops", strings.Count(systemdtest.OutcomeOps, "[[op]]")), "PRIORITY=7", "SYSLOG_IDENTIFIER=unitrun")

	ok := callJSON(t, "ok")
	job := func(r api.Record) []string {
		return []string{"JOB_ID=" + r.ID, "OP=" + r.Op, "UNIT=" + r.Unit, "CALLER_UID=0"}
	}
	expectEntry(t, j, "started", append(job(ok), "PRIORITY=6")...)
	expectEntry(t, j, "succeeded: exit status 0", append(job(ok), "PRIORITY=6", "STATE=succeeded", "RESULT=success")...)
	failed := callJSON(t, "exit", "3")
	expectEntry(t, j, "started", job(failed)...)
	expectEntry(t, j, "failed: exit status 3", append(job(failed), "PRIORITY=4", "STATE=failed", "RESULT=exit-code")...)

	if _, errs, code := unitrun(t, "op", "call", "nobody"); code != 125 || !strings.Contains(errs, "unauthorized") {
		t.Fatalf("op call nobody as root: exit %d, %q: want 125 and unauthorized", code, errs)
	}
	expectEntry(t, j, "refused", "PRIORITY=4", "OP=nobody", "CALLER_UID=0", "REASON=unauthorized")

	out, _, _ := unitrun(t, "op", "call", "--no-wait", "hold")
	id := strings.TrimSpace(out)
	got := j.Next(t)
	if got["JOB_ID"] != id || !strings.Contains(got["MESSAGE"], "started") {
		t.Fatalf("journal entry %v: want the start of job %s", got, id)
	}
	// The unit tells journalctl -u and systemctl status whose job it is.
	// "started" is logged as the unit is being started: wait for it.
	systemdtest.WaitActiveState(t, systemdtest.Conn(t), got["UNIT"], "active")
	props, err := systemdtest.Conn(t).Properties(context.Background(), got["UNIT"], manager.UnitIface)
	if err != nil || props["Description"].Value() != "unitrun op hold, job "+id+", caller uid:0" {
		t.Errorf("unit %s: Description %v (%v)", got["UNIT"], props["Description"], err)
	}
	if props, err := systemdtest.Conn(t).Properties(context.Background(), got["UNIT"], manager.ServiceIface); err != nil || props["SyslogIdentifier"].Value() != "unitrun-hold" {
		t.Errorf("unit %s: SyslogIdentifier %v (%v), want unitrun-hold", got["UNIT"], props["SyslogIdentifier"], err)
	}
	if _, errs, code := unitrun(t, "op", "cancel", id); code != 0 {
		t.Fatalf("op cancel: exit %d, %q", code, errs)
	}
	expectEntry(t, j, "canceled while running", "JOB_ID="+id, "OP=hold", "PRIORITY=6")
	expectEntry(t, j, "canceled", "JOB_ID="+id, "STATE=canceled")

	if b, _ := os.ReadFile(stderr.Name()); len(b) != 0 {
		t.Errorf("stderr holds %q, want nothing: the entries go to the journal", b)
	}
}

// TestDaemonLogStderr runs the daemon with a JOURNAL_STREAM that is not its
// stderr (a child of a journal-logged service whose stderr was redirected):
// it must log slog text to stderr, filtered by --log-level.
func TestDaemonLogStderr(t *testing.T) {
	for _, c := range []struct {
		level     string
		want, not []string
	}{
		{"debug", []string{"level=DEBUG", "level=INFO", "level=WARN"}, nil},
		{"info", []string{"level=INFO", "level=WARN"}, []string{"level=DEBUG"}},
		{"warn", []string{"level=WARN"}, []string{"level=DEBUG", "level=INFO"}},
		{"error", nil, []string{"level=DEBUG", "level=INFO", "level=WARN"}},
	} {
		t.Run(c.level, func(t *testing.T) {
			var stderr bytes.Buffer
			d := systemdtest.NewDaemon(t, systemdtest.OutcomeOps)
			d.Flags = []string{"--log-level", c.level}
			d.Env = []string{"JOURNAL_STREAM=1:1"}
			d.Stderr = &stderr
			d.Start(t)
			t.Setenv("UNITRUN_SOCKET", d.API)
			failed := callJSON(t, "exit", "3")
			d.Cmd.Process.Signal(syscall.SIGTERM)
			if err := d.Cmd.Wait(); err != nil {
				t.Fatalf("daemon after SIGTERM: %v", err)
			}
			text := stderr.String()
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("--log-level %s: stderr %q: no %s line", c.level, text, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(text, n) {
					t.Errorf("--log-level %s: stderr %q: has a %s line", c.level, text, n)
				}
			}
			if c.level == "warn" && !strings.Contains(text, "job_id="+failed.ID+" op=exit unit="+failed.Unit+" caller_uid=0 state=failed result=exit-code") {
				t.Errorf("stderr %q: no line with the failed job's attributes", text)
			}
		})
	}
	_, errs, code := unitrun(t, "daemon", "--log-level", "loud")
	if code != 2 || !strings.Contains(errs, `--log-level "loud": must be debug, info, warn or error`) {
		t.Errorf("daemon --log-level loud: exit %d, %q: want 2 naming the flag and the values", code, errs)
	}
}

// TestDaemonLogJournald runs the daemon on the journal stream of a real
// systemd-journald: its entries must arrive by the native protocol
// (_TRANSPORT=journal), with fields journalctl matches on.
func TestDaemonLogJournald(t *testing.T) {
	j := systemdtest.NewJournald(t)
	d := systemdtest.NewDaemon(t, systemdtest.OutcomeOps)
	d.Wrap = j.Wrap()
	d.Start(t)
	t.Setenv("UNITRUN_SOCKET", d.API)
	ok := callJSON(t, "ok")
	failed := callJSON(t, "exit", "3")

	entries := j.Entries(t, 2, "JOB_ID="+failed.ID)
	if len(entries) != 2 {
		t.Fatalf("journal entries of job %s: %v, want its start and its end", failed.ID, entries)
	}
	end := entries[1]
	for k, v := range map[string]string{
		"_TRANSPORT": "journal", "SYSLOG_IDENTIFIER": "unitrun", "PRIORITY": "4",
		"OP": "exit", "UNIT": failed.Unit, "CALLER_UID": "0", "STATE": "failed", "RESULT": "exit-code",
		"MESSAGE": "job " + failed.ID + " of op exit failed: exit status 3",
	} {
		if end[k] != v {
			t.Errorf("journal entry %v: %s=%v, want %s", end, k, end[k], v)
		}
	}
	if got := j.Entries(t, 1, "OP=ok", "STATE=succeeded"); len(got) != 1 || got[0]["JOB_ID"] != ok.ID || got[0]["PRIORITY"] != "6" {
		t.Errorf("journal entries OP=ok STATE=succeeded: %v, want the one of job %s at priority 6", got, ok.ID)
	}
}
