package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// The test binary, run with callerFaceEnv set, is a caller of the daemon
// that calls an op through one front end and holds the call until it is
// killed (callAndHold).
const (
	callerFaceEnv = "UNITRUN_TEST_CALLER_FACE"
	callerAddrEnv = "UNITRUN_TEST_CALLER_ADDR"
	callerOpEnv   = "UNITRUN_TEST_CALLER_OP"
)

// callAndHold calls op through front end face ("http": a POST with
// "wait": true; "seqpacket"; "dbus": Call) at addr, a socket or a bus
// address, and waits for the answer, which the test kills it before.
func callAndHold(face, addr, op string) int {
	var err error
	switch face {
	case "http":
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}}}
		var resp *http.Response
		if resp, err = hc.Post("http://unitrun/v1/ops/"+op, "application/json", strings.NewReader(`{"wait": true}`)); err == nil {
			resp.Body.Close()
		}
	case "seqpacket":
		var c net.Conn
		if c, err = net.Dial("unixpacket", addr); err == nil {
			pkt, _ := api.EncodeRequest(op, nil)
			c.Write(pkt)
			_, err = c.Read(make([]byte, 64<<10))
		}
	case "dbus":
		var conn *dbus.Conn
		if conn, err = dbus.Connect(addr); err == nil {
			var id string
			if err = conn.Object(front.DBusName, front.DBusPath).Call(front.DBusIface+".Call", 0, op, []string{}).Store(&id); err == nil {
				select {} // on the bus until killed
			}
		}
	}
	fmt.Fprintln(os.Stderr, face, "caller:", err)
	return 1
}

// disconnected starts the message of a job canceled because its last
// waiting caller went away.
const disconnected = `canceled because its last waiting caller disconnected (on_disconnect = "stop")`

// An op with on_disconnect "stop" is canceled, its unit stopped and its
// record canceled, saying that its caller went away (not that a caller
// canceled it), when its caller is SIGKILLed while the job runs,
// through every front end: "unitrun op call" (it streamed the output on
// one connection and waited on another only once that ended, so its
// death went unseen), a raw HTTP call with "wait": true, a SEQPACKET call
// and a D-Bus Call (the caller's bus name vanishing; D-Bus callers were
// never stopped).
func TestOnDisconnectStopOnEveryFrontEnd(t *testing.T) {
	addr := startBus(t)
	d := systemdtest.NewDaemon(t, `
[[op]]
name = "stoppy"
exec = ["/bin/sh", "-c", "echo started; exec sleep 60"]
on_disconnect = "stop"
`)
	d.Flags = []string{"--dbus", addr}
	d.Start(t)
	c := client.New(d.API)
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		face   string
		caller *exec.Cmd
	}{
		{"cli", exec.Command(systemdtest.Binary(t), "op", "call", "--socket", d.API, "stoppy")},
		{"http", exec.Command(self)},
		{"seqpacket", exec.Command(self)},
		{"dbus", exec.Command(self)},
	} {
		t.Run(tc.face, func(t *testing.T) {
			addrOf := map[string]string{"http": d.API, "seqpacket": d.Argv, "dbus": addr}
			tc.caller.Env = append(os.Environ(), callerFaceEnv+"="+tc.face, callerAddrEnv+"="+addrOf[tc.face], callerOpEnv+"=stoppy")
			if tc.face == "cli" {
				tc.caller.Env = os.Environ()
			}
			var errb bytes.Buffer
			tc.caller.Stderr = &errb
			var progress *bufio.Scanner
			if tc.face == "cli" {
				tc.caller.Stderr = nil
				pipe, err := tc.caller.StderrPipe()
				if err != nil {
					t.Fatal(err)
				}
				progress = bufio.NewScanner(io.TeeReader(pipe, &errb))
			}
			before, err := c.Jobs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.caller.Start(); err != nil {
				t.Fatal(err)
			}
			id := runningJob(t, c, before)
			// op call killed while it streams the output, which it does
			// once it has the job's id and the job started.
			for progress != nil && progress.Scan() && !strings.HasSuffix(progress.Text(), "(op stoppy): started") {
			}
			tc.caller.Process.Signal(syscall.SIGKILL)
			tc.caller.Wait()
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			rec, err := c.Wait(wctx, id)
			if err != nil || rec.State != api.StateCanceled || !strings.HasPrefix(rec.Message, disconnected+": ") {
				t.Fatalf("job %s after its %s caller was SIGKILLed: %+v, %v; want canceled, the message saying why (caller stderr %q)", id, tc.face, rec, err, errb.String())
			}
			// What op status and op jobs show says so too.
			if out, errs, code := unitrun(t, "op", "status", "--socket", d.API, id); code != 0 || !strings.Contains(out, "message\t"+rec.Message+"\n") {
				t.Errorf("op status %s: exit %d, %q, stderr %q; want the message %q", id, code, out, errs, rec.Message)
			}
			if out, errs, code := unitrun(t, "op", "jobs", "--socket", d.API); code != 0 || !strings.Contains(out, id+"\tstoppy\tcanceled\t"+rec.Message+"\t") {
				t.Errorf("op jobs: exit %d, %q, stderr %q; want job %s's message %q", code, out, errs, id, rec.Message)
			}
			props, err := systemdtest.Conn(t).Properties(ctx, rec.Unit, "org.freedesktop.systemd1.Unit")
			if err != nil {
				t.Fatal(err)
			}
			if state := props["ActiveState"].Value(); state == "active" || state == "activating" {
				t.Errorf("unit %s of the canceled job is %v, want it stopped", rec.Unit, state)
			}
		})
	}
}

// runningJob returns the id of the job that is not among before once its
// op has printed "started".
func runningJob(t *testing.T, c *client.Client, before []*api.Record) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		recs, err := c.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if slices.ContainsFunc(before, func(b *api.Record) bool { return b.ID == r.ID }) {
				continue
			}
			var out bytes.Buffer
			if c.Logs(ctx, r.ID, false, &out); out.String() == "started\n" {
				return r.ID
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no new job printed started within a minute")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startGatedDaemon starts a daemon with the op "gated" (on_disconnect
// "stop"), which prints "started", runs until the file gate exists, then
// prints "done". However the test ends, its jobs end.
func startGatedDaemon(t *testing.T) (d *systemdtest.Daemon, gate string) {
	gate = filepath.Join(t.TempDir(), "gate")
	d = systemdtest.NewDaemon(t, fmt.Sprintf(`
[[op]]
name = "gated"
exec = ["/bin/sh", "-c", "echo started; while [ ! -e %s ]; do sleep 0.05; done; echo done"]
on_disconnect = "stop"
`, gate))
	d.Start(t)
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	return d, gate
}

// restartDaemon stops the daemon with SIGTERM and starts it again.
func restartDaemon(t *testing.T, d *systemdtest.Daemon) {
	d.Cmd.Process.Signal(syscall.SIGTERM)
	if err := d.Cmd.Wait(); err != nil {
		t.Fatalf("daemon after SIGTERM: %v", err)
	}
	d.Start(t)
}

// A daemon that stops (SIGTERM, a restart) closes its callers'
// connections itself: that is no caller going away, so the running job of
// an on_disconnect "stop" op goes on, for the next daemon to report. It
// was canceled as the daemon stopped, and the next daemon recorded it
// failed by SIGTERM. "unitrun op call" follows the job across the restart
// and exits with its status; a SEQPACKET caller's job goes on too.
func TestDaemonRestartKeepsStopOnDisconnectJobs(t *testing.T) {
	d, gate := startGatedDaemon(t)
	c := client.New(d.API)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cliOut, cliErr bytes.Buffer
	cli := exec.Command(systemdtest.Binary(t), "op", "call", "--socket", d.API, "gated")
	cli.Stdout, cli.Stderr = &cliOut, &cliErr
	packet := exec.Command(self)
	packet.Env = append(os.Environ(), callerFaceEnv+"=seqpacket", callerAddrEnv+"="+d.Argv, callerOpEnv+"=gated")
	var ids []string
	for _, caller := range []*exec.Cmd{cli, packet} {
		before, err := c.Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := caller.Start(); err != nil {
			t.Fatal(err)
		}
		defer caller.Process.Kill()
		ids = append(ids, runningJob(t, c, before))
	}
	restartDaemon(t, d)
	for _, id := range ids {
		if rec, err := c.Job(ctx, id); err != nil || rec.State != api.StateRunning {
			t.Fatalf("job %s after the daemon restarted: %+v, %v; want it still running", id, rec, err)
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if rec, err := c.Wait(ctx, id); err != nil || rec.State != api.StateSucceeded {
			t.Errorf("job %s: %+v, %v; want succeeded", id, rec, err)
		}
	}
	if err := cli.Wait(); err != nil || cliOut.String() != "started\ndone\n" {
		t.Errorf("op call across the restart: %v, stdout %q, stderr %q; want exit 0 and the whole output", err, cliOut.String(), cliErr.String())
	}
}

// "unitrun op call" whose daemon restarted still holds its job: SIGKILLed
// once it follows the job on the next daemon, its on_disconnect "stop"
// job is canceled. It waited on the next daemon only once the job's
// output had ended, so while the output streamed no caller held the job
// there, and the job ran on after op call was killed.
func TestOpCallKilledAfterDaemonRestart(t *testing.T) {
	d, _ := startGatedDaemon(t)
	c := client.New(d.API)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before, err := c.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cli := exec.Command(systemdtest.Binary(t), "op", "call", "--socket", d.API, "gated")
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	defer cli.Process.Kill()
	id := runningJob(t, c, before)
	restartDaemon(t, d)
	// op call follows the job's output and waits for its end, each on a
	// connection of its own, once it has reached the next daemon.
	for n := 0; n < 2; n = connectedTo(t, d.API) {
		if ctx.Err() != nil {
			t.Fatalf("op call has %d connections to the restarted daemon; want 2, its output and its wait", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cli.Process.Signal(syscall.SIGKILL)
	cli.Wait()
	rec, err := c.Wait(ctx, id)
	if err != nil || rec.State != api.StateCanceled || !strings.HasPrefix(rec.Message, disconnected+": ") {
		t.Errorf("job %s after op call was SIGKILLed on the restarted daemon: %+v, %v; want canceled, the message saying why", id, rec, err)
	}
}

// connectedTo counts the connections that the unix stream socket bound at
// path has accepted and that are still open (/proc/net/unix: the path and
// state 03, connected).
func connectedTo(t *testing.T, path string) int {
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 8 && f[5] == "03" && f[7] == path {
			n++
		}
	}
	return n
}
