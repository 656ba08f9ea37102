package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/dist"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// testBusConfig is a bus with the system bus's default policy (as
// /usr/share/dbus-1/system.conf has it: anyone may connect, no one may own
// a name or call a method unless a policy allows it) and the shipped
// policy and service file of org.unitrun.Ops1; @DIR@ is its directory.
const testBusConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=@DIR@/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>@DIR@/services</servicedir>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <include>@DIR@/org.unitrun.Ops1.conf</include>
</busconfig>
`

// startBus runs a dbus-daemon on testBusConfig for the test and returns
// its address. Its socket is one any uid may connect to.
func startBus(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "unitrun-test-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "services"), 0o755); err != nil {
		t.Fatal(err)
	}
	for file, to := range map[string]string{"org.unitrun.Ops1.conf": dir, "org.unitrun.Ops1.service": filepath.Join(dir, "services")} {
		data, err := fs.ReadFile(dist.DBus, "dbus/"+file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(strings.ReplaceAll(testBusConfig, "@DIR@", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--nosyslog", "--print-address")
	cmd.Stderr = os.Stderr
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
		t.Fatalf("dbus-daemon on the shipped policy does not start: %v", err)
	}
	return strings.TrimSpace(addr)
}

// busctl runs busctl --json=short on the bus, prefixed by the words of as,
// and returns the "data" of its answer, or the error it printed.
func busctl(t *testing.T, addr string, as []string, args ...string) ([]json.RawMessage, string) {
	t.Helper()
	argv := slices.Concat(as, []string{"busctl", "--json=short", "--address=" + addr}, args)
	cmd := exec.Command(argv[0], argv[1:]...)
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, strings.TrimSpace(errb.String()) + " (" + err.Error() + ")"
	}
	var reply struct{ Data []json.RawMessage }
	if err := json.Unmarshal(out, &reply); err != nil {
		t.Fatalf("%q: %q: %v", argv, out, err)
	}
	return reply.Data, ""
}

// opsCall is the busctl words that call a method of org.unitrun.Ops1.
func opsCall(method string) []string {
	return []string{"call", front.DBusName, string(front.DBusPath), front.DBusIface, method}
}

// busRecord calls method (Wait, Get, Cancel) on job id and decodes the
// a{sv} record busctl prints.
func busRecord(t *testing.T, addr, method, id string) map[string]any {
	t.Helper()
	data, errs := busctl(t, addr, nil, append(opsCall(method), "s", id)...)
	if errs != "" {
		t.Fatalf("%s %s: %s", method, id, errs)
	}
	var rec map[string]struct{ Data any }
	if err := json.Unmarshal(data[0], &rec); err != nil {
		t.Fatalf("%s %s: %s: %v", method, id, data[0], err)
	}
	flat := make(map[string]any, len(rec))
	for k, v := range rec {
		flat[k] = v.Data
	}
	return flat
}

// busCallID calls op with args through busctl, as the words of as, and
// returns the job id, or the error busctl printed.
func busCallID(t *testing.T, addr string, as []string, op string, args ...string) (string, string) {
	t.Helper()
	words := append(opsCall("Call"), "sas", op, strconv.Itoa(len(args)))
	data, errs := busctl(t, addr, as, append(words, args...)...)
	if errs != "" {
		return "", errs
	}
	var id string
	json.Unmarshal(data[0], &id)
	return id, ""
}

// opsOnBus connects to the bus at addr, for the test, and returns the
// connection, the daemon's object on it and the Finished signals that the
// connection receives.
func opsOnBus(t *testing.T, addr string) (*dbus.Conn, dbus.BusObject, <-chan *dbus.Signal) {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.AddMatchSignal(dbus.WithMatchInterface(front.DBusIface), dbus.WithMatchMember("Finished")); err != nil {
		t.Fatal(err)
	}
	signals := make(chan *dbus.Signal, 10)
	conn.Signal(signals)
	return conn, conn.Object(front.DBusName, front.DBusPath), signals
}

// finished waits for a Finished signal on ch and returns its body.
func finished(t *testing.T, ch <-chan *dbus.Signal) []any {
	t.Helper()
	select {
	case s := <-ch:
		if s.Name != front.DBusIface+".Finished" || s.Path != front.DBusPath {
			t.Fatalf("signal %s on %s, want Finished", s.Name, s.Path)
		}
		return s.Body
	case <-time.After(30 * time.Second):
		t.Fatal("no Finished signal")
	}
	return nil
}

// TestDaemonDBus serves the daemon binary on a bus with the shipped policy
// and calls it with busctl, as root and as uid 65534, and with a Go client
// that receives Finished signals.
func TestDaemonDBus(t *testing.T) {
	addr := startBus(t)
	d := systemdtest.NewDaemon(t, systemdtest.OutcomeOps)
	d.Flags = []string{"--dbus", addr}
	d.Start(t)
	nobody := []string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"}

	id, errs := busCallID(t, addr, nil, "exit", "3")
	if errs != "" {
		t.Fatalf("busctl Call exit 3: %s", errs)
	}
	rec := busRecord(t, addr, "Wait", id)
	if rec["id"] != id || rec["op"] != "exit" || rec["state"] != "failed" || rec["exit_code"] != float64(3) || rec["caller_uid"] != float64(0) {
		t.Errorf("Wait %s: %v: want op exit, state failed, exit_code 3, caller_uid 0", id, rec)
	}

	if _, errs := busCallID(t, addr, nobody, "ok"); !strings.Contains(errs, `op "ok": uid 65534 is not in allow_uids`) {
		t.Errorf("Call ok as uid 65534: %q, want refused naming the uid", errs)
	}
	if _, errs := busctl(t, addr, nobody, append(opsCall("Get"), "s", id)...); !strings.Contains(errs, "no such job") {
		t.Errorf("Get of root's job as uid 65534: %q, want no such job", errs)
	}
	theirs, errs := busCallID(t, addr, nobody, "nobody")
	if errs != "" {
		t.Fatalf("Call nobody as uid 65534: %s, want allowed", errs)
	}
	data, errs := busctl(t, addr, nobody, append(opsCall("Wait"), "s", theirs)...)
	if errs != "" || !strings.Contains(string(data[0]), `"state":{"type":"s","data":"succeeded"}`) || !strings.Contains(string(data[0]), `"caller_uid":{"type":"u","data":65534}`) {
		t.Errorf("Wait %s as uid 65534: %s %s: want succeeded, caller_uid 65534", theirs, data, errs)
	}

	// allow_gids by the groups the bus reports: supplementary and primary.
	var groupIDs []any
	for _, as := range [][]string{
		{"setpriv", "--reuid", "2", "--regid", "2", "--groups", "65534"},
		{"setpriv", "--reuid", "2", "--regid", "65534", "--clear-groups"},
	} {
		gid, errs := busCallID(t, addr, as, "group")
		if errs != "" {
			t.Errorf("Call group as %q: %s, want allowed", as, errs)
		}
		groupIDs = append([]any{gid}, groupIDs...)
	}
	if _, errs := busCallID(t, addr, []string{"setpriv", "--reuid", "2", "--regid", "2", "--clear-groups"}, "group"); !strings.Contains(errs, "none of its gids is in allow_gids") {
		t.Errorf("Call group as uid and gid 2 (bin): %q, want refused", errs)
	}

	conn, ops, signals := opsOnBus(t, addr)

	// The connection that called gets Finished.
	var okID string
	if err := ops.Call(front.DBusIface+".Call", 0, "ok", []string{}).Store(&okID); err != nil {
		t.Fatal(err)
	}
	if got := finished(t, signals); !slices.Equal(got, []any{okID, true, int32(0), "exit status 0"}) {
		t.Errorf("Finished %v, want (%s, true, 0, exit status 0)", got, okID)
	}
	// A late subscriber gets the recorded outcome, once.
	if err := ops.Call(front.DBusIface+".Subscribe", 0, id).Err; err != nil {
		t.Fatal(err)
	}
	if got := finished(t, signals); !slices.Equal(got, []any{id, false, int32(3), "exit status 3"}) {
		t.Errorf("Finished after Subscribe %v, want (%s, false, 3, exit status 3)", got, id)
	}
	// A subscriber of a running job gets Finished when it ends: here, canceled.
	var holdID string
	if err := ops.Call(front.DBusIface+".Call", 0, "hold", []string{}).Store(&holdID); err != nil {
		t.Fatal(err)
	}
	if err := ops.Call(front.DBusIface+".Subscribe", 0, holdID).Err; err != nil {
		t.Fatal(err)
	}
	if rec := busRecord(t, addr, "Cancel", holdID); rec["state"] != "canceled" {
		t.Errorf("Cancel %s: %v, want state canceled", holdID, rec)
	}
	// Called and subscribed on one connection: one signal. How the
	// stopped process ended (signal, or exit 0 when systemd reports the
	// SIGTERM as clean) is the job package's to tell.
	if got := finished(t, signals); len(got) != 4 || got[0] != holdID || got[1] != false || !strings.HasPrefix(got[3].(string), "canceled by a caller") {
		t.Errorf("Finished of the canceled job %v, want (%s, false, ..., canceled by a caller: ...)", got, holdID)
	}
	sentinel := finishedOnce(t, ops, signals, map[string]int{holdID: 1})

	err := ops.Call(front.DBusIface+".Call", 0, "nobody", []string{}).Err
	var derr dbus.Error
	if !errors.As(err, &derr) || derr.Name != "org.unitrun.Ops1.Error.unauthorized" {
		t.Errorf("Call nobody as root: %v, want org.unitrun.Ops1.Error.unauthorized", err)
	}
	var jobs [][]any
	if err := ops.Call(front.DBusIface+".List", 0).Store(&jobs); err != nil {
		t.Fatal(err)
	}
	var ids []any
	for _, j := range jobs {
		ids = append(ids, j[0])
	}
	if want := slices.Concat([]any{sentinel, holdID, okID}, groupIDs, []any{theirs, id}); !slices.Equal(ids, want) {
		t.Errorf("List: %v, want %v, newest first", ids, want)
	}
	out, err := exec.Command("busctl", "--address="+addr, "introspect", front.DBusName, string(front.DBusPath), front.DBusIface).Output()
	for _, member := range []string{".Call ", ".Get ", ".Wait ", ".List ", ".Cancel ", ".Subscribe ", ".Finished "} {
		if !strings.Contains(string(out), member) {
			t.Errorf("busctl introspect (%v): no %s in\n%s", err, member, out)
		}
	}
	var names []string
	if err := conn.BusObject().Call("org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err != nil || !slices.Contains(names, front.DBusName) {
		t.Errorf("activatable names %v (%v): want %s from the shipped service file", names, err, front.DBusName)
	}
}

// TestDaemonDBusUnreachable starts the daemon binary with a bus that is not
// there: it serves its sockets (Start waits for /healthz) and logs that
// the D-Bus front end is off.
func TestDaemonDBusUnreachable(t *testing.T) {
	d := systemdtest.NewDaemon(t, systemdtest.OutcomeOps)
	d.Flags = []string{"--dbus", "unix:path=" + filepath.Join(d.Dir, "no-bus")}
	log, err := os.Create(filepath.Join(d.Dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	d.Stderr = log
	d.Start(t)
	c := client.New(d.API)
	id, err := c.Call(t.Context(), "ok", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := c.Wait(t.Context(), id); err != nil || rec.State != api.StateSucceeded {
		t.Errorf("op over HTTP with no bus: %+v, %v", rec, err)
	}
	data, err := os.ReadFile(log.Name())
	if err != nil || !strings.Contains(string(data), "D-Bus front end off") {
		t.Errorf("daemon's log: %q, %v: want it to say the D-Bus front end is off", data, err)
	}
}

// finishedOnce has the connection of ops call op "ok" and reads the
// Finished signals on signals up to that job's, whose id it returns: each
// of the jobs of seen (job id: its Finished signals read so far) must have
// had one in all. The signals of one job go out together, before the job
// ended that the connection calls only now, so a second one would come
// first.
func finishedOnce(t *testing.T, ops dbus.BusObject, signals <-chan *dbus.Signal, seen map[string]int) string {
	t.Helper()
	var okID string
	if err := ops.Call(front.DBusIface+".Call", 0, "ok", []string{}).Store(&okID); err != nil {
		t.Fatal(err)
	}
	for {
		got := finished(t, signals)
		if got[0] == okID {
			break
		}
		seen[got[0].(string)]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %s: %d Finished signals, want 1", id, n)
		}
	}
	return okID
}

// A connection that subscribes to a job three times gets its Finished
// once, and the connections of one uid await at most
// max_subscriptions_per_uid jobs by Subscribe: one more is refused as
// busy, naming the limit, while subscribing again to one it awaits is not
// (each Subscribe was kept, so one uid grew the daemon without bound).
func TestDaemonDBusSubscribeOnce(t *testing.T) {
	addr := startBus(t)
	d := systemdtest.NewDaemon(t, systemdtest.OutcomeOps+`
[[op]]
name = "sleepy"
exec = ["/bin/sh", "-c", "exec sleep 60", "sh"]
args = { min = 1, max = 1 }

[limits]
max_subscriptions_per_uid = 2
`)
	d.Flags = []string{"--dbus", addr}
	d.Start(t)
	_, ops, signals := opsOnBus(t, addr)
	subscribe := func(id string) error { return ops.Call(front.DBusIface+".Subscribe", 0, id).Err }

	// Called by busctl, whose connection leaves at once: the jobs go on
	// (on_disconnect "continue") and only this connection awaits them.
	var ids []string
	for _, arg := range []string{"a", "b", "c"} {
		id, errs := busCallID(t, addr, nil, "sleepy", arg)
		if errs != "" {
			t.Fatalf("Call sleepy %s: %s", arg, errs)
		}
		ids = append(ids, id)
	}
	for range 3 {
		if err := subscribe(ids[0]); err != nil {
			t.Fatalf("Subscribe %s: %v", ids[0], err)
		}
	}
	if err := subscribe(ids[1]); err != nil {
		t.Fatalf("Subscribe %s, the second job: %v", ids[1], err)
	}
	var derr dbus.Error
	if err := subscribe(ids[2]); !errors.As(err, &derr) || derr.Name != front.DBusIface+".Error.busy" || !strings.Contains(fmt.Sprint(derr.Body...), "max_subscriptions_per_uid") {
		t.Errorf("Subscribe to a third job with max_subscriptions_per_uid = 2: %v, want %s.Error.busy naming the limit", err, front.DBusIface)
	}
	if err := subscribe(ids[0]); err != nil {
		t.Errorf("Subscribe again to a job awaited, at the bound: %v, want accepted", err)
	}
	for _, id := range ids {
		if rec := busRecord(t, addr, "Cancel", id); rec["state"] != "canceled" {
			t.Errorf("Cancel %s: %v, want state canceled", id, rec)
		}
	}
	finishedOnce(t, ops, signals, map[string]int{ids[0]: 0, ids[1]: 0})
}
