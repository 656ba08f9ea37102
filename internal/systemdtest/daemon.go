package systemdtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	// Env, when set, is added to the daemon's environment, such as a
	// UNITRUN_MANAGER naming another manager than the test one.
	Env []string
}

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
	cmd := exec.Command(Binary(t), append(d.Args(), "--socket", d.API, "--seqpacket", d.Argv)...)
	cmd.Stderr = os.Stderr
	if d.Env != nil {
		cmd.Env = append(os.Environ(), d.Env...)
	}
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
	hc := &http.Client{Transport: &http.Transport{Dial: func(string, string) (net.Conn, error) { return net.Dial("unix", d.API) }}}
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
