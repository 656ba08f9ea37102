// Package daemontest holds what the tests of the daemon's scheduler
// (package hostapi/scheduler) and of its front ends (package hostapi/front) share: a
// config of test ops, a daemon on it, its front ends served on sockets any
// user may reach, and calls to them. It imports neither package, so that
// the tests of each can use it.
package daemontest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/manager"
)

// testOps is the config the daemon tests run; @DIR@ is replaced by the
// test's directory.
const testOps = `
[[op]]
name = "echo"
exec = ["/bin/sh", "-c", "echo \"out:$1:$CLIENT\"; echo err >&2; exit \"${2:-0}\"", "sh"]
args = { max = 2 }
allow_uids = [0]
env = { CLIENT = "{caller}" }

[[op]]
name = "sleep"
exec = ["/bin/sleep"]
args = { min = 1, max = 1, pattern = "^[0-9]+$" }
timeout = "1s"

[[op]]
name = "excl"
exec = ["/bin/sh", "-c", "echo run:$1 >>@DIR@/runs; sleep 1", "sh"]
args = { max = 1 }
exclusive = true

[[op]]
name = "refuse"
exec = ["/bin/sleep", "{args}"]
args = { min = 1, max = 1 }
exclusive = true
on_busy = "join-or-refuse"

[[op]]
name = "reboot"
exec = ["/usr/bin/touch", "@DIR@/reboot-needed"]
reboot_marker = "@DIR@/reboot-needed"

[[op]]
name = "slowfail"
exec = ["/bin/sh", "-c", "echo started; sleep 1; exit 3"]

[[op]]
name = "linger"
exec = ["/bin/sh", "-c", "echo started; exec sleep 30"]

[[op]]
name = "stopme"
exec = ["/bin/sh", "-c", "echo started; exec sleep 30"]
on_disconnect = "stop"

[[op]]
name = "bound"
exec = ["/bin/sh", "-c", "echo started; exec sleep 30"]
bind_to_caller = true

[[op]]
name = "nobody"
exec = ["/bin/true"]
allow_uids = [65534]
`

// WriteConfig writes a config of testOps and extra to daemon.toml in a
// new temp dir of the test, and returns the file and the dir.
func WriteConfig(t testing.TB, extra string) (file, dir string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "daemon.toml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(testOps+extra, "@DIR@", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, dir
}

// Open returns a daemon, made by newDaemon, on a config of testOps and
// extra (WriteConfig), a store that openStore opens in the state subdir
// of the config's dir, and mgr, once it has recovered; and that dir. The
// daemon is closed when the test ends, before the dir is removed. The
// tests of package hostapi/scheduler pass scheduler.OpenStore and scheduler.New.
func Open[S any, D interface {
	Recover() error
	Close()
}](t *testing.T, mgr *manager.Conn, extra string, openStore func(dir string) (S, error), newDaemon func(*config.Config, S, *manager.Conn) D) (D, string) {
	t.Helper()
	file, dir := WriteConfig(t, extra)
	cfg, err := config.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := openStore(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	d := newDaemon(cfg, store, mgr)
	if err := d.Recover(); err != nil {
		t.Fatal(err)
	}
	// Before the temp dir goes: units still being released write there.
	t.Cleanup(d.Close)
	return d, dir
}

// Serve has s serve the HTTP and SEQPACKET front ends of c, s's Core, on
// sockets that any user may connect to, in a directory any user may
// enter, so that tests can call as another uid; it returns the two
// socket paths.
func Serve(t *testing.T, c core.Core, s *front.Server) (apiSock, argv string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "unitrun-test-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	apiSock, argv = filepath.Join(dir, "api.sock"), filepath.Join(dir, "argv.sock")
	hl, err := front.ListenUnix("unix", apiSock, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := front.ListenUnix("unixpacket", argv, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	srv := front.NewHTTPServer(c)
	go s.ServeHTTP(srv, hl)
	go s.ServeSeqpacket(pl)
	t.Cleanup(func() {
		srv.Close()
		pl.Close()
	})
	return apiSock, argv
}

// Curl runs curl on the socket, prefixed by the words of as (such as a
// setpriv command line), and returns the HTTP status and the body.
func Curl(t *testing.T, sock string, as []string, args ...string) (int, string) {
	t.Helper()
	argv := append(as, "curl", "-sS", "--unix-socket", sock, "-w", "\n%{http_code}")
	argv = append(argv, args...)
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	i := strings.LastIndexByte(string(out), '\n')
	body, code := string(out[:i]), string(out[i+1:])
	var status int
	fmt.Sscan(code, &status)
	return status, body
}

// ErrorCode returns the code of an HTTP error body.
func ErrorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct{ Error api.Error }
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Error.Code
}

// SeqpacketRoundTrip sends one request packet to the SEQPACKET socket and
// returns the response.
func SeqpacketRoundTrip(t *testing.T, sock string, pkt []byte) (bool, string, string) {
	t.Helper()
	c, err := net.Dial("unixpacket", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(pkt); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	ok, id, msg, err := api.ParseResponse(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	return ok, id, msg
}

// ExitCode is the record's exit code, -1 when it has none.
func ExitCode(r *api.Record) int {
	if r.ExitCode == nil {
		return -1
	}
	return *r.ExitCode
}

// Output returns the output the job of id wrote so far, "" when c cannot
// read it.
func Output(c core.Core, id string) string {
	var b strings.Builder
	c.CopyOutput(context.Background(), &b, id, 0, false, func() {})
	return b.String()
}
