package scheduler_test

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestSecurityConnectionFlood has root, which may call no op of the
// daemon, open 600 connections over both sockets, sending nothing, to a
// daemon whose descriptor limit is 256 and which would wait ten minutes
// for a request. Connections past root's share are refused as busy and
// closed at once; the daemon stays below its limit and alive, and serves
// uid 65534, the op's caller, while root holds the rest.
func TestSecurityConnectionFlood(t *testing.T) {
	const nofile, conns = 256, 600
	d := systemdtest.NewDaemon(t, `
[[op]]
name = "nobody"
exec = ["/bin/echo", "served"]
allow_uids = [65534]

[limits]
read_header_timeout = "10m"
`)
	d.Wrap = []string{"prlimit", "--nofile=256:256", "--"}
	d.Start(t)
	// Let uid 65534 reach the sockets.
	for _, p := range []string{filepath.Dir(d.Dir), d.Dir, d.API, d.Argv} {
		mode := os.FileMode(0o755)
		if p == d.API || p == d.Argv {
			mode = 0o666
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	ctx := faultCtx(t, 2*time.Minute)

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range conns {
		network, sock := "unix", d.API
		if i%2 == 1 {
			network, sock = "unixpacket", d.Argv
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, sock)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		held = append(held, c)
	}
	// A refused connection has its answer and is closed within the read
	// deadline; one let in waits for a request (ten minutes).
	var (
		mu      sync.Mutex
		refused int
		wg      sync.WaitGroup
	)
	for _, c := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() && len(got) == 0 {
				return // let in
			}
			mu.Lock()
			defer mu.Unlock()
			s := string(got)
			if !strings.Contains(s, "busy") || !strings.Contains(s, "connections open to the daemon") {
				t.Errorf("%s connection: got %q, %v: want a busy answer and the close, or nothing", c.RemoteAddr().Network(), s, err)
				return
			}
			refused++
		}()
	}
	wg.Wait()
	if refused == 0 {
		t.Fatalf("none of %d connections was refused", conns)
	}
	if s := readProcStats(t, d.Cmd.Process.Pid); s.FDs >= nofile-32 {
		t.Errorf("daemon holds %d descriptors, of a limit of %d: want a reserve kept", s.FDs, nofile)
	} else {
		t.Logf("%d of %d connections refused; daemon: %v", refused, conns, s)
	}

	out, err := exec.CommandContext(ctx, "setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
		"curl", "-sS", "--unix-socket", d.API, "-d", `{"wait": true}`, "http://unitrun/v1/ops/nobody").Output()
	var rec api.Record
	if err != nil || json.Unmarshal(out, &rec) != nil || rec.State != api.StateSucceeded {
		t.Fatalf("call of uid 65534 while root holds its connections: %s, %v: want a succeeded job", out, err)
	}
	if !strings.Contains(d.Log(), "connection of uid 0 refused") {
		t.Errorf("daemon log names no refused connection:\n%s", d.Log())
	}
}
