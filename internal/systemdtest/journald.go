package systemdtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// journaldScript starts a real systemd-journald in the mount namespace it
// runs in, over a /run of its own (volatile storage only, its journal
// files in the test's dir, bind-mounted on /run/log), then runs its
// command with stdout and stderr on a journal stream and JOURNAL_STREAM
// naming it, as systemd runs a service with StandardError=journal.
const journaldScript = `set -e
dir=$1; shift
mount -t tmpfs -o mode=0755 unitrun-journald /run
mkdir -p /run/systemd/journal /run/systemd/journald.conf.d /run/log
printf '[Journal]\nStorage=volatile\nReadKMsg=no\nAudit=no\nRateLimitBurst=0\n' >/run/systemd/journald.conf.d/test.conf
mount --bind "$dir/log" /run/log
/lib/systemd/systemd-journald >"$dir/journald.log" 2>&1 &
echo $! >"$dir/journald.pid"
n=0
until [ -S /run/systemd/journal/stdout ]; do
	n=$((n+1)); [ $n -lt 600 ] || { echo "systemd-journald does not start" >&2; exit 1; }
	sleep 0.05
done
exec systemd-cat -t unitrun-stream sh -c 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@"' sh "$@"`

// Journald is a real systemd-journald for one command of a test: Wrap
// returns the command line that runs it, in a private mount namespace, and
// then the command on its journal stream. The journal files are in Dir;
// the test's end stops journald.
type Journald struct {
	Dir string
}

// NewJournald makes a Journald; register it before the command's own
// cleanup, so that journald outlives the command.
func NewJournald(t testing.TB) *Journald {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(dir, "journald.pid"))
		if err != nil {
			return
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		syscall.Kill(pid, syscall.SIGTERM)
		for Alive(pid) {
			time.Sleep(10 * time.Millisecond)
		}
	})
	return &Journald{Dir: dir}
}

// Wrap returns the words to put before a command: they start journald and
// run the command on its journal stream.
func (j *Journald) Wrap() []string {
	return []string{"unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", journaldScript, "journald", j.Dir}
}

// Entries waits, up to 30s, until the journal holds want entries that
// match matches (journalctl FIELD=value words) and returns them, each
// field as journalctl -o json --all gives it (large ones too). It fails
// the test on fewer.
func (j *Journald) Entries(t testing.TB, want int, matches ...string) []map[string]any {
	t.Helper()
	var entries []map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		args := append([]string{"-D", filepath.Join(j.Dir, "log", "journal"), "-o", "json", "--all", "--no-pager"}, matches...)
		out, err := exec.Command("journalctl", args...).Output()
		entries = nil
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var e map[string]any
			if json.Unmarshal(line, &e) == nil {
				entries = append(entries, e)
			}
		}
		if err == nil && len(entries) >= want {
			return entries
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(j.Dir, "journald.log"))
			t.Fatalf("journal %v: %d entries, want %d (journalctl: %v; journald: %s)", matches, len(entries), want, err, log)
		}
	}
}
