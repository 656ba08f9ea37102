package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unicode"

	"github.com/unitrun/unitrun/dist"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestSecurityOpJobsTerminal has one caller start a job whose arg holds a
// line break, a carriage return and terminal escapes, then lists the jobs
// and prints the job's record as another caller of the op would: the
// output holds no control character but the line ends, and no row that the
// arg forged.
func TestSecurityOpJobsTerminal(t *testing.T) {
	t.Setenv("UNITRUN_SOCKET", startDaemon(t))
	const forged = "20261202T000000Z-00000000  sh  succeeded  exit status 0  forged"
	arg := "exit 0 # \x1b[2J\x1b[H\r\n" + forged + "\x1b]0;title\x07\u009b2J"
	if _, errs, code := unitrun(t, "op", "call", "sh", arg); code != 0 {
		t.Fatalf("op call: exit %d: %s", code, errs)
	}
	out, errs, code := unitrun(t, "op", "jobs")
	if code != 0 {
		t.Fatalf("op jobs: exit %d: %s", code, errs)
	}
	// Piped, the listing is tab-separated lines without a header.
	id := strings.Split(out, "\t")[0]
	_, status, _ := unitrun(t, "op", "status", id)
	for what, text := range map[string]string{"op jobs": out, "op status": status} {
		for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if strings.HasPrefix(line, forged) {
				t.Errorf("%s: line %d is forged: %q", what, i+1, line)
			}
			if j := strings.IndexFunc(line, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }); j >= 0 {
				t.Errorf("%s: line %d holds control character %q: %q", what, i+1, line[j:j+1], line)
			}
		}
	}
	if !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("op jobs does not show the arg, escaped: %q", out)
	}
}

// TestSecurityDaemonSocketModes starts the daemon binding its own sockets,
// in a directory every user may enter, and connects as uid 65534: the
// sockets are root's with mode 0600 and refuse the connection. The shipped
// socket units ask systemd for the same mode.
func TestSecurityDaemonSocketModes(t *testing.T) {
	d := systemdtest.NewDaemon(t, "")
	if err := os.Chmod(d.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d.Start(t)
	const connect = `import socket, sys
s = socket.socket(socket.AF_UNIX, int(sys.argv[2]))
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print(type(e).__name__)
`
	for _, s := range []struct {
		path string
		typ  int
	}{{d.API, syscall.SOCK_STREAM}, {d.Argv, syscall.SOCK_SEQPACKET}} {
		fi, err := os.Lstat(s.path)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o600 || st.Uid != 0 {
			t.Errorf("%s: mode %v, owner %d; want 0600 and root", s.path, fi.Mode().Perm(), st.Uid)
		}
		out, err := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
			"/usr/bin/python3", "-c", connect, s.path, fmt.Sprint(s.typ)).CombinedOutput()
		if err != nil || string(out) != "PermissionError\n" {
			t.Errorf("uid 65534 connecting to %s: %q, %v; want PermissionError", s.path, out, err)
		}
	}
	for _, name := range []string{"unitrun.socket", "unitrun-argv.socket"} {
		data, err := dist.Systemd.ReadFile("systemd/" + name)
		if err != nil || !strings.Contains(string(data), "\nSocketMode=0600\n") {
			t.Errorf("%s: %v: want SocketMode=0600", name, err)
		}
	}
}
