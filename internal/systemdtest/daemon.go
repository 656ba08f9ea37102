package systemdtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Daemon is a "unitrun daemon" for a test: its config, state and sockets
// live in Dir.
type Daemon struct {
	Dir  string
	API  string // the HTTP socket
	Argv string // the SEQPACKET socket
	Cmd  *exec.Cmd
	// Flags, Env and Stderr, set before Start, are more flags for the
	// daemon, more environment variables (after the test's own) and where
	// its stderr goes (nil: kept, and logged if the test fails). Wrap, when set, is a
	// command line that runs the daemon's (Journald.Wrap); it must exec
	// the daemon, so that the daemon gets Start's SIGTERM.
	Flags  []string
	Env    []string
	Stderr io.Writer
	Wrap   []string

	log *tailBuffer // the daemon's stderr, when Stderr is nil
}

// Log returns what the daemon has written to its stderr so far (the last
// 256 KiB), or "" when Stderr was set at Start.
func (d *Daemon) Log() string {
	if d.log == nil {
		return ""
	}
	return d.log.String()
}

// OutcomeOps is a daemon config of ops with known outcomes: "ok"
// succeeds, "exit" exits with its one arg, "hold" (exclusive, up to one
// arg) runs until canceled, "nobody" only uid 65534 may call, and "group"
// only gid 65534.
const OutcomeOps = `
[[op]]
name = "ok"
exec = ["/bin/true"]

[[op]]
name = "exit"
exec = ["/bin/sh", "-c", "exit \"$1\"", "sh"]
args = { min = 1, max = 1 }

[[op]]
name = "hold"
exec = ["/bin/sh", "-c", "exec sleep 60", "sh"]
args = { max = 1 }
exclusive = true

[[op]]
name = "nobody"
exec = ["/bin/true"]
allow_uids = [65534]

[[op]]
name = "group"
exec = ["/bin/true"]
allow_gids = [65534]
`

// NewDaemon writes config as the daemon's daemon.toml in a new directory.
// Start starts it.
func NewDaemon(t testing.TB, config string) *Daemon {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "daemon.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Daemon{Dir: dir, API: filepath.Join(dir, "api.sock"), Argv: filepath.Join(dir, "argv.sock")}
}

// StartDaemon is NewDaemon and Start.
func StartDaemon(t testing.TB, config string) *Daemon {
	t.Helper()
	d := NewDaemon(t, config)
	d.Start(t)
	return d
}

// Args returns the daemon's flags without the socket flags, which socket
// activation replaces.
func (d *Daemon) Args() []string {
	return []string{"daemon", "--config", filepath.Join(d.Dir, "daemon.toml"), "--ops-dir", filepath.Join(d.Dir, "ops.d"),
		"--state-dir", filepath.Join(d.Dir, "state")}
}

// Start starts the daemon binary by flags (again, after a stop, on the
// same state) and waits until its HTTP socket answers /healthz; the test's
// end stops it with SIGTERM.
func (d *Daemon) Start(t testing.TB) {
	t.Helper()
	argv := slices.Concat(d.Wrap, []string{Binary(t)}, d.Args(), []string{"--socket", d.API, "--seqpacket", d.Argv}, d.Flags)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = d.Stderr
	if cmd.Stderr == nil {
		log := new(tailBuffer)
		d.log = log
		cmd.Stderr = log
		// Registered before the stop below, so it runs after it and
		// holds the daemon's last words.
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("daemon %s stderr:\n%s", d.Dir, log.String())
			}
		})
	}
	// Wait returns at most 5 s after the daemon exits, even if a process
	// it started still holds its stderr open.
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), d.Env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.Cmd = cmd
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // the test stopped it and waited
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("daemon after SIGTERM: %v, want exit 0", err)
		}
	})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", d.API)
	}}}
	var last error
	for range 500 {
		resp, err := hc.Get("http://unitrun/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("/healthz: %s", resp.Status)
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("daemon at %s does not answer: %v", d.API, last)
}

// tailBuffer keeps the last tailMax bytes written to it, for concurrent
// writers.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 256 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - tailMax; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
