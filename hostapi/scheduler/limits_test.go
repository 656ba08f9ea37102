package scheduler_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os/exec"
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

// limitsConfig sets every limit of [limits] low enough to breach.
const limitsConfig = `
[[op]]
name = "hold"
exec = ["/bin/sleep", "{args}"]
args = { min = 1, max = 1, pattern = "^[0-9]+$" }

[[op]]
name = "excl"
exec = ["/bin/sleep", "{args}"]
args = { min = 1, max = 1, pattern = "^[0-9]+$" }
exclusive = true

[[op]]
name = "loud"
exec = ["/bin/sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a; printf END"]

[[op]]
name = "true"
exec = ["/bin/true"]

[limits]
max_request_bytes = 512
max_live_jobs = 3
max_queue = 1
output_tail_bytes = 100
records_keep = 2
read_header_timeout = "300ms"
idle_timeout = "1s"
`

// wantCode fails the test unless err is a daemon error with code whose
// message names the limit.
func wantCode(t *testing.T, what string, err error, code, limit string) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Message, limit) {
		t.Errorf("%s: %v, want code %s and a message naming %s", what, err, code, limit)
	}
}

// TestLimitsBreached breaches each limit of [limits] on the daemon binary:
// every breach is refused with its code and a message naming the limit,
// the tail kept in a record is bounded, old records are pruned, and slow
// or idle connections are closed; the daemon answers throughout.
func TestLimitsBreached(t *testing.T) {
	d := systemdtest.NewDaemon(t, limitsConfig)
	bus := sessionBus(t)
	d.Flags = []string{"--dbus", bus}
	d.Start(t)
	c := client.New(d.API)
	ctx := faultCtx(t, 60*time.Second)
	busConn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	defer busConn.Close()
	ops := busConn.Object(front.DBusName, front.DBusPath)
	busCall := func(op string, args ...string) error {
		var id string
		err := ops.CallWithContext(ctx, front.DBusIface+".Call", 0, op, append([]string{}, args...)).Store(&id)
		var e dbus.Error
		if errors.As(err, &e) && strings.HasPrefix(e.Name, front.DBusIface+".Error.") {
			msg, _ := e.Body[0].(string)
			return &api.Error{Code: strings.TrimPrefix(e.Name, front.DBusIface+".Error."), Message: msg}
		}
		return err
	}

	// max_request_bytes, on every front end.
	_, err = c.Call(ctx, "hold", []string{strings.Repeat("1", 600)})
	wantCode(t, "HTTP body of 600 bytes", err, api.CodeTooLarge, "max_request_bytes")
	ok, id, msg, err := seqCall(ctx, d.Argv, seqRequest(t, "hold", strings.Repeat("1", 600)))
	if err != nil || ok || id != "" || !strings.HasPrefix(msg, api.CodeTooLarge+": ") || !strings.Contains(msg, "max_request_bytes") {
		t.Errorf("SEQPACKET packet of 600 bytes: %v %q %q, %v: want error too_large naming max_request_bytes", ok, id, msg, err)
	}
	wantCode(t, "D-Bus Call of 600 bytes", busCall("hold", strings.Repeat("1", 600)), api.CodeTooLarge, "max_request_bytes")
	wantCode(t, "D-Bus Call of 30 MB", busCall("hold", strings.Repeat("1", 30<<20)), api.CodeTooLarge, "max_request_bytes")

	// max_queue, then max_live_jobs: excl runs, one excl call waits.
	var live []string
	for _, args := range []string{"30", "31"} {
		id, err := c.Call(ctx, "excl", []string{args})
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, id)
	}
	_, err = c.Call(ctx, "excl", []string{"32"})
	wantCode(t, "second queued call", err, api.CodeBusy, "max_queue")
	wantCode(t, "second queued call over D-Bus", busCall("excl", "32"), api.CodeBusy, "max_queue")
	id, err = c.Call(ctx, "hold", []string{"30"})
	if err != nil {
		t.Fatal(err)
	}
	live = append(live, id)
	_, err = c.Call(ctx, "hold", []string{"30"})
	wantCode(t, "fourth live job", err, api.CodeBusy, "max_live_jobs")
	ok, id, msg, err = seqCall(ctx, d.Argv, seqRequest(t, "true"))
	if err != nil || ok || id != "" || !strings.HasPrefix(msg, api.CodeBusy+": ") || !strings.Contains(msg, "max_live_jobs") {
		t.Errorf("SEQPACKET call over max_live_jobs: %v %q %q, %v", ok, id, msg, err)
	}
	wantCode(t, "D-Bus call over max_live_jobs", busCall("true"), api.CodeBusy, "max_live_jobs")
	for _, id := range live {
		if rec, err := c.Cancel(ctx, id); err != nil || rec.State != api.StateCanceled {
			t.Errorf("cancel %s: %+v, %v", id, rec, err)
		}
	}

	// output_tail_bytes: the record keeps the last 100 bytes of 5003.
	id, err = c.Call(ctx, "loud", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := c.Wait(ctx, id)
	if want := strings.Repeat("a", 97) + "END"; err != nil || rec.OutputTail != want {
		t.Errorf("loud: tail %q, %v: want the last 100 bytes", rec.OutputTail, err)
	}
	var logs strings.Builder
	if err := c.Logs(ctx, id, false, &logs); err != nil || logs.Len() != 5003 {
		t.Errorf("loud: log of %d bytes, %v: want the whole 5003", logs.Len(), err)
	}

	// read_header_timeout: headers sent a byte at a time are cut off,
	// while others are served.
	if err := slowHeaders(ctx, d.API, 20*time.Millisecond, func() { healthy(ctx, t, d, "true") }); err != nil {
		t.Errorf("slow headers: %v", err)
	}

	// read_header_timeout: a SEQPACKET connection that sends no packet.
	silent, err := net.Dial("unixpacket", d.Argv)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silent.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 4096)
	n, err := silent.Read(buf)
	if err != nil {
		t.Fatalf("silent SEQPACKET connection: %v, want an answer", err)
	}
	if ok, id, msg, err := api.ParseResponse(buf[:n]); err != nil || ok || id != "" || !strings.HasPrefix(msg, api.CodeBadRequest+": ") || !strings.Contains(msg, "read_header_timeout") {
		t.Errorf("silent SEQPACKET connection: %v %q %q, %v: want bad_request naming the timeout", ok, id, msg, err)
	}

	// idle_timeout: a kept-alive connection is closed once idle.
	conn2, err := net.Dial("unix", d.API)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	conn2.Write([]byte("GET /healthz HTTP/1.1\r\nHost: unitrun\r\n\r\n"))
	br := bufio.NewReader(conn2)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("kept-alive request: %q, %v", line, err)
	}
	conn2.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("idle connection: %v, want it closed by the daemon", err)
	}

	// records_keep: of the 6 or more jobs that ran, only the 2 newest records
	// stay, pruned as jobs finish, and so after a restart.
	var before []*api.Record
	for ctx.Err() == nil {
		if before, err = c.Jobs(ctx); err != nil || len(before) <= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || len(before) != 2 {
		t.Fatalf("jobs once finished: %d, %v: want the 2 of records_keep", len(before), err)
	}
	d.Cmd.Process.Signal(syscall.SIGTERM)
	if err := d.Cmd.Wait(); err != nil {
		t.Fatalf("daemon after SIGTERM: %v", err)
	}
	d.Start(t)
	recs, err := c.Jobs(ctx)
	if err != nil || len(recs) != 2 || recs[0].ID != before[0].ID || recs[1].ID != before[1].ID {
		t.Errorf("jobs after restart: %d, %v: want the same 2", len(recs), err)
	}
}

// sessionBus runs a dbus-daemon with the session bus's config for the
// test and returns its address.
func sessionBus(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--nosyslog", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon --session: %v", err)
	}
	return strings.TrimSpace(addr)
}
