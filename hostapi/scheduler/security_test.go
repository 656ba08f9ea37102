package scheduler

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/store"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// securityOps are the ops the attacks below aim at; @DIR@ is the test's
// directory.
const securityOps = `
[[op]]
name = "argv"
exec = ['/bin/sh', '-c', 'printf "%s\0" "$@"; printf "PT:%s\0" "$PT"; while [ ! -e @DIR@/gate ]; do sleep 0.05; done', 'sh']
args = { max = 20 }
env_passthrough = ["PT"]

[[op]]
name = "for-a"
exec = ["/bin/true"]
allow_uids = [65534]

[[op]]
name = "for-b"
exec = ["/bin/sh", "-c", "echo secret of b; exec sleep 30"]
allow_uids = [65533]
`

// unixHTTP is an HTTP client of the daemon's socket.
func unixHTTP(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
}

// waitOutput waits until the job's output log holds want.
func waitOutput(t *testing.T, d *Scheduler, id, want string) {
	t.Helper()
	for range 1000 {
		if got, _ := os.ReadFile(d.store.disk().OutputPath(id)); string(got) == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, _ := os.ReadFile(d.store.disk().OutputPath(id))
	t.Fatalf("job %s: output %q, want %q", id, got, want)
}

// TestSecurityExecArgsExact sends hostile args over HTTP (JSON) and
// SEQPACKET to an exec op, with a hostile env_passthrough value, reloads
// the manager while the job runs (systemd then re-reads the unit from the
// file it wrote for it), and checks that the op received every arg and the
// value exactly, that the reloaded unit has no command but its own
// ExecStart= and still wants its pin, that the outcome was recorded, and
// that no injected command ran.
func TestSecurityExecArgsExact(t *testing.T) {
	conn := systemdtest.Conn(t)
	d, dir := newTestScheduler(t, conn, securityOps)
	args := systemdtest.Hostile(dir)
	pt := "pt\nExecStopPost=/usr/bin/touch " + filepath.Join(dir, "pwned.env") + " $HOME %n \\ '\""
	d.LookupEnv = func(k string) (string, bool) { return pt, k == "PT" }
	apiSock, argv := serveTest(t, d)
	want := strings.Join(args, "\x00") + "\x00PT:" + pt + "\x00"

	body, _ := json.Marshal(api.CallRequest{Args: args})
	resp, err := unixHTTP(apiSock).Post("http://unitrun/v1/ops/argv", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var accepted struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&accepted)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("call: %s", resp.Status)
	}
	waitOutput(t, d, accepted.ID, want)
	rec, _ := d.Get(accepted.ID)
	ctx := context.Background()
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	props, err := conn.Properties(ctx, rec.Unit, manager.ServiceIface)
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range map[string]int{"ExecStartPre": 0, "ExecStartPost": 0, "ExecStop": 0, "ExecStopPost": 0, "ExecStart": 1} {
		if v := reflect.ValueOf(props[k].Value()); v.Kind() != reflect.Slice || v.Len() != n {
			t.Errorf("after daemon-reload the unit has %s=%s, want %d commands", k, props[k], n)
		}
	}
	if u, err := conn.Properties(ctx, rec.Unit, manager.UnitIface); err != nil || !slices.Contains(u["Wants"].Value().([]string), job.PinName(rec.Unit)) {
		t.Errorf("after daemon-reload the unit wants %v (%v), want its pin %s", u["Wants"], err, job.PinName(rec.Unit))
	}

	// The same args over SEQPACKET, which carries them NUL-separated.
	os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644)
	pkt, err := api.EncodeRequest("argv", args)
	if err != nil {
		t.Fatal(err)
	}
	ok, id, msg := seqpacketRoundTrip(t, argv, pkt)
	if !ok {
		t.Fatalf("SEQPACKET call: %s", msg)
	}
	for _, id := range []string{accepted.ID, id} {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		r, err := d.Wait(wctx, id)
		cancel()
		if err != nil || r.State != api.StateSucceeded || !slices.Equal(r.Args, args) {
			t.Errorf("job %s: %+v, %v: want succeeded with the args as sent", id, r, err)
			continue
		}
		if got, _ := os.ReadFile(d.store.disk().OutputPath(id)); string(got) != want {
			t.Errorf("job %s: the op received\n%q\nwant\n%q", id, got, want)
		}
	}
	systemdtest.NoPwned(t, dir)
}

// TestSecurityArgsRefused sends args that no argv or request file can carry
// as given: the call is refused naming the arg, and no job exists.
func TestSecurityArgsRefused(t *testing.T) {
	d, dir := newTestScheduler(t, systemdtest.Conn(t), securityOps+`
[[op]]
name = "lines"
unit = "unitrun-test-never.service"
request_file = "@DIR@/request"
args = { max = 2 }
`)
	apiSock, argvSock := serveTest(t, d)
	for _, tt := range []struct {
		op, body, want string
	}{
		{"argv", `{"args": ["ok", "a\u0000b"]}`, "arg 1 contains NUL"},
		{"lines", `{"args": ["a", "good\nExtra=line"]}`, `arg 1 contains a newline`},
	} {
		resp, err := unixHTTP(apiSock).Post("http://unitrun/v1/ops/"+tt.op, "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || errorCode(t, string(data)) != api.CodeBadArgs || !strings.Contains(string(data), tt.want) {
			t.Errorf("%s %s: %d %s, want 400 bad_args with %q", tt.op, tt.body, resp.StatusCode, data, tt.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "request")); err == nil {
		t.Error("a refused call wrote the request file")
	}
	// Over SEQPACKET an arg is raw bytes: invalid UTF-8 is refused.
	if ok, id, msg := seqpacketRoundTrip(t, argvSock, []byte("argv\x00ok\x00\xff\xfe\x00")); ok || id != "" || !strings.HasPrefix(msg, api.CodeBadRequest+": ") {
		t.Errorf("SEQPACKET arg not UTF-8: %v %q %q, want a bad_request refusal and no job", ok, id, msg)
	}
	// Over HTTP, bytes that are not UTF-8 and lone surrogate escapes,
	// which encoding/json turns into U+FFFD, are refused.
	for _, body := range []string{"{\"args\": [\"ok\", \"\xff\"]}", `{"args": ["ok", "\ud800"]}`} {
		resp, err := unixHTTP(apiSock).Post("http://unitrun/v1/ops/argv", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || errorCode(t, string(data)) != api.CodeBadRequest || !strings.Contains(string(data), "arg 1: ") {
			t.Errorf("%q: %d %s, want 400 bad_request naming arg 1", body, resp.StatusCode, data)
		}
	}
	if recs, _ := d.List(); len(recs) != 0 {
		t.Errorf("%d jobs after refused calls, want none", len(recs))
	}
}

// TestSecurityRequestFileExact passes args with newlines, NULs refused,
// quotes and specifiers through a "nul" request file to a unit op, whose
// request file path an attacker replaced by a symlink: the file holds the
// args exactly, and the symlink's target is untouched.
func TestSecurityRequestFileExact(t *testing.T) {
	conn := systemdtest.Conn(t)
	dir := t.TempDir()
	req := filepath.Join(dir, "request")
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	if err := os.Symlink(victim, req); err != nil {
		t.Fatal(err)
	}
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), "unitrun-test-nulreq.service"), `[Unit]
Description=unitrun test nul request
[Service]
Type=oneshot
ExecStart=/bin/cp `+req+` `+dir+`/seen
`)
	if err := conn.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.ResetFailedUnit(context.Background(), "unitrun-test-nulreq.service") })
	d, _ := newTestScheduler(t, conn, `
[[op]]
name = "nulreq"
unit = "unitrun-test-nulreq.service"
request_file = "`+req+`"
request_format = "nul"
args = { max = 20 }
`)
	args := systemdtest.Hostile(dir)
	if r := call(t, d, "nulreq", args...); r.State != api.StateSucceeded {
		t.Fatalf("record %+v: want succeeded", r)
	}
	if seen, _ := os.ReadFile(filepath.Join(dir, "seen")); string(seen) != strings.Join(args, "\x00")+"\x00" {
		t.Errorf("request file held %q", seen)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if fi, err := os.Lstat(req); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("request file: %v, %v: want a regular file of mode 0600 in place of the symlink", fi.Mode(), err)
	}
	systemdtest.NoPwned(t, dir)
}

// rawHTTP sends request as written (no client cleans its path) and returns
// the response's status and body.
func rawHTTP(t *testing.T, sock, request string) (int, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", request, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestSecurityJobIDTraversal asks for jobs by ids that climb out of the
// jobs directory, to a directory laid out as a job (record, output,
// outcome) beside it: every endpoint answers 404 not_found (or the mux's
// redirect for a path it cleans), nothing of the planted job comes back,
// and the store's own calls refuse the ids and create nothing.
func TestSecurityJobIDTraversal(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), securityOps)
	apiSock, _ := serveTest(t, d)
	planted := filepath.Join(d.store.dir, "planted")
	os.Mkdir(planted, 0o700)
	rec := `{"id": "../planted", "op": "argv", "state": "running", "unit": "x.service", "caller_uid": 0}` + "\n"
	os.WriteFile(filepath.Join(planted, recordFile), []byte(rec), 0o600)
	os.WriteFile(filepath.Join(planted, outputFile), []byte("PLANTED SECRET"), 0o600)
	// Where the output log of the job "../planted" would be.
	os.WriteFile(filepath.Join(d.store.dir, "planted.log"), []byte("PLANTED SECRET"), 0o600)
	for _, id := range []string{"..%2Fplanted", "%2E%2E%2Fplanted", "..%2F..%2Fjobs%2F..%2Fplanted", "%2Fetc", "..", ".", "..%2f..%2f..%2fetc%2fpasswd", "planted%00", "20261202T142501Z-0123abcd%2F..%2F..%2Fplanted"} {
		for _, req := range []string{"GET /v1/jobs/" + id, "GET /v1/jobs/" + id + "/logs", "GET /v1/jobs/" + id + "/wait", "DELETE /v1/jobs/" + id} {
			status, body := rawHTTP(t, apiSock, req+" HTTP/1.1\r\nHost: unitrun\r\nConnection: close\r\n\r\n")
			if strings.Contains(body, "PLANTED") || strings.Contains(body, "root:") {
				t.Errorf("%s: %d %s: read outside the jobs dir", req, status, body)
			}
			if status != 404 && status != 400 && status != 301 && status != 307 {
				t.Errorf("%s: %d %s: want 404, 400 or a redirect", req, status, body)
			}
		}
	}
	for _, id := range []string{"../planted", "../../etc", "/etc", "20261202T142501Z-0123abcd/../../planted"} {
		if _, err := d.store.Get(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Get(%q): %v, want ErrInvalidID", id, err)
		}
		if f, err := d.store.OpenOutput(id); !errors.Is(err, ErrInvalidID) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenOutput(%q): %v, want ErrInvalidID", id, err)
		}
		if _, err := d.store.Tail(id, 10); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Tail(%q): %v, want ErrInvalidID", id, err)
		}
		if d.store.disk().OutputPath(id) != "" {
			t.Errorf("%q: the store gave a path for it", id)
		}
		if err := d.store.Put(&api.Record{ID: id, Op: "argv", State: api.StateRunning}); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Put(%q): %v, want ErrInvalidID", id, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(planted, recordFile)); string(b) != rec {
		t.Errorf("the planted record was changed: %s", b)
	}
}

// TestSecuritySymlinksInJobDir plants symlinks where the store reads and
// writes output logs: the output log of a job that has no record yet, and
// that of a real job, each a symlink to a file outside. Reads and writes
// refuse them, and no file outside is read or written.
func TestSecuritySymlinksInJobDir(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), securityOps)
	apiSock, _ := serveTest(t, d)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("OUTSIDE SECRET"), 0o600)

	// The output log of a job not yet stored.
	linked := d.store.NewID()
	if err := os.Symlink(secret, d.store.disk().OutputPath(linked)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/jobs/" + linked, "/v1/jobs/" + linked + "/logs", "/v1/jobs"} {
		if status, body := rawHTTP(t, apiSock, "GET "+path+" HTTP/1.1\r\nHost: unitrun\r\nConnection: close\r\n\r\n"); strings.Contains(body, "OUTSIDE") || strings.Contains(body, linked) && status == 200 {
			t.Errorf("GET %s: %d %s: followed the symlinked output log", path, status, body)
		}
	}
	if err := d.store.Put(&api.Record{ID: linked, Op: "argv", State: api.StateFailed}); err != nil {
		t.Fatal(err)
	}
	if f, err := d.store.OpenOutput(linked); err == nil {
		f.Close()
		t.Error("OpenOutput followed a symlinked output log")
	}
	if got, err := d.store.Tail(linked, 100); err == nil {
		t.Errorf("Tail followed a symlinked output log: %q", got)
	}

	// The output log of a real job.
	r := call(t, d, "echo")
	p := d.store.disk().OutputPath(r.ID)
	os.Remove(p)
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	if f, err := d.store.OpenOutput(r.ID); err == nil {
		f.Close()
		t.Error("OpenOutput followed a symlinked output log")
	}
	if status, body := rawHTTP(t, apiSock, "GET /v1/jobs/"+r.ID+"/logs HTTP/1.1\r\nHost: unitrun\r\nConnection: close\r\n\r\n"); strings.Contains(body, "OUTSIDE") {
		t.Errorf("GET the logs of %s: %d %s: followed the symlinked output log", r.ID, status, body)
	}
	if b, _ := os.ReadFile(secret); string(b) != "OUTSIDE SECRET" {
		t.Errorf("the file outside was written: %q", b)
	}
}

// asCaller runs curl against the daemon's socket as uid (and gid) in a
// container-like caller (systemdtest.Caller) and returns the HTTP status
// and body.
func asCaller(t *testing.T, apiSock string, uid int, args ...string) (int, string) {
	t.Helper()
	argv := append([]string{"curl", "-sS", "--unix-socket", systemdtest.CallerSocket, "-w", "\n%{http_code}"}, args...)
	out, err := systemdtest.Caller(apiSock, uid, uid, argv...).Output()
	if err != nil {
		t.Fatalf("curl as uid %d %q: %v\n%s", uid, args, err, out)
	}
	i := strings.LastIndexByte(string(out), '\n')
	var status int
	fmt.Sscan(string(out[i+1:]), &status)
	return status, string(out[:i])
}

// TestSecurityCallerIsolation has uid 65533 (B) start a job of an op only
// it may call, then has uid 65534 (A), from a container-like caller of its
// own, try to see, follow, wait for and cancel that job, to claim B's uid
// in headers and the body, and to call B's op over HTTP and SEQPACKET. A
// learns nothing of the job, B's job runs on, and the records hold the uid
// the kernel reported.
func TestSecurityCallerIsolation(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), securityOps)
	apiSock, argv := serveTest(t, d)
	const host = "http://unitrun"
	const a, b = 65534, 65533

	status, body := asCaller(t, apiSock, b, "-X", "POST", "-d", `{}`, host+"/v1/ops/for-b")
	var accepted struct{ ID string }
	if json.Unmarshal([]byte(body), &accepted); status != 202 || accepted.ID == "" {
		t.Fatalf("B calls for-b: %d %s", status, body)
	}
	id := accepted.ID
	t.Cleanup(func() { d.Cancel(context.Background(), id) })
	waitOutput(t, d, id, "secret of b\n")

	for _, tt := range []struct {
		args []string
		code string
	}{
		{[]string{host + "/v1/jobs/" + id}, api.CodeNotFound},
		{[]string{host + "/v1/jobs/" + id + "/logs"}, api.CodeNotFound},
		{[]string{host + "/v1/jobs/" + id + "/logs?follow=1"}, api.CodeNotFound},
		{[]string{host + "/v1/jobs/" + id + "/wait"}, api.CodeNotFound},
		{[]string{"-X", "DELETE", host + "/v1/jobs/" + id}, api.CodeNotFound},
		{[]string{"-X", "POST", "-d", `{}`, host + "/v1/ops/for-b"}, api.CodeUnauthorized},
		{[]string{"-X", "POST", "-H", "X-Unitrun-Uid: 65533", "-H", "X-Forwarded-User: 65533", "-d", `{}`, host + "/v1/ops/for-b"}, api.CodeUnauthorized},
		{[]string{"-X", "POST", "-d", `{"caller_uid": 65533}`, host + "/v1/ops/for-b"}, api.CodeBadRequest},
		{[]string{"-X", "POST", "-d", `{"args": [], "uid": 0}`, host + "/v1/ops/for-b"}, api.CodeBadRequest},
	} {
		status, body := asCaller(t, apiSock, a, tt.args...)
		if strings.Contains(body, "secret of b") || errorCode(t, body) != tt.code {
			t.Errorf("A %q: %d %s, want code %s and nothing of B's job", tt.args, status, body, tt.code)
		}
	}
	if status, body := asCaller(t, apiSock, a, host+"/v1/jobs"); status != 200 || strings.Contains(body, id) {
		t.Errorf("A lists jobs: %d %s: B's job is listed", status, body)
	}
	if status, body := asCaller(t, apiSock, b, host+"/v1/jobs/"+id+"/logs"); status != 200 || body != "secret of b\n" {
		t.Errorf("B reads its own job's log: %d %q", status, body)
	}

	// A's own call records A's uid, whatever it sends.
	status, body = asCaller(t, apiSock, a, "-X", "POST", "-H", "X-Unitrun-Uid: 0", "-d", `{"wait": true}`, host+"/v1/ops/for-a")
	var rec api.Record
	if json.Unmarshal([]byte(body), &rec); status != 200 || rec.CallerUID != a || rec.State != api.StateSucceeded {
		t.Errorf("A calls for-a: %d %s: want a succeeded record with caller_uid %d", status, body, a)
	}

	// SEQPACKET from A's container: the socket's path is outside its /run.
	const script = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(sys.argv[2].encode().replace(b",", b"\0"))
print(s.recv(65536).decode().replace("\0", "|"))
`
	for _, tt := range []struct{ req, want string }{
		{"for-b,", `error||unauthorized: op "for-b": uid 65534 is not in allow_uids`},
		{"for-a,", "ok|"},
	} {
		out, err := systemdtest.Caller(apiSock, a, a, "python3", "-c", script, argv, tt.req).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), tt.want) {
			t.Errorf("A over SEQPACKET %q: %s, %v: want %q...", tt.req, out, err, tt.want)
		}
	}
	recs, _ := d.List()
	for _, r := range recs {
		if want := map[string]uint32{"for-a": a, "for-b": b}[r.Op]; r.CallerUID != want {
			t.Errorf("job %s of %s: caller_uid %d, want %d", r.ID, r.Op, r.CallerUID, want)
		}
	}
	if r, err := d.Get(id); err != nil || r.State != api.StateRunning {
		t.Errorf("B's job after A's attempts: %+v, %v: want it running", r, err)
	}
}

// sendAndRead writes head, then body, in the background until the server
// answers or closes, and returns the response.
func sendAndRead(t *testing.T, sock, head string, body io.Reader) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if body == nil {
		body = strings.NewReader("")
	}
	// The server may answer and close before it has read everything.
	go io.Copy(c, io.MultiReader(strings.NewReader(head), body))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response to %.60q: %v", head, err)
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp, string(data)
}

// endless is a reader that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestSecurityHugeRequests sends a 10 MB body, a 10 MB header, a chunked
// body that never ends and a SEQPACKET packet one byte over the limit: each
// is refused with its size error, no job starts, and the daemon goes on
// serving.
func TestSecurityHugeRequests(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), securityOps)
	apiSock, argv := serveTest(t, d)
	limit := d.cfg.Limits.MaxRequestBytes
	big := strings.Repeat("x", 10<<20)

	resp, body := sendAndRead(t, apiSock, fmt.Sprintf("POST /v1/ops/argv HTTP/1.1\r\nHost: unitrun\r\nContent-Length: %d\r\n\r\n", len(big)), strings.NewReader(big))
	if resp.StatusCode != 413 || errorCode(t, body) != api.CodeTooLarge || !strings.Contains(body, "max_request_bytes") {
		t.Errorf("10 MB body: %s %s, want 413 %s naming max_request_bytes", resp.Status, body, api.CodeTooLarge)
	}
	resp, body = sendAndRead(t, apiSock, "POST /v1/ops/argv HTTP/1.1\r\nHost: unitrun\r\nTransfer-Encoding: chunked\r\n\r\n", io.MultiReader(
		strings.NewReader("10000\r\n"), io.LimitReader(endless{}, 0x10000), strings.NewReader("\r\n10000\r\n"), endless{}))
	if resp.StatusCode != 413 || errorCode(t, body) != api.CodeTooLarge {
		t.Errorf("endless chunked body: %s %s, want 413 %s", resp.Status, body, api.CodeTooLarge)
	}
	resp, _ = sendAndRead(t, apiSock, "GET /v1/ops HTTP/1.1\r\nHost: unitrun\r\nX-Big: "+big+"\r\n\r\n", nil)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("10 MB header: %s, want 431", resp.Status)
	}
	pkt := append([]byte("argv\x00"), strings.Repeat("y", limit-4)...)
	if ok, id, msg := seqpacketRoundTrip(t, argv, pkt); ok || id != "" || !strings.HasPrefix(msg, api.CodeTooLarge+": ") {
		t.Errorf("SEQPACKET packet of %d bytes: %v %q %q, want a %s refusal", len(pkt), ok, id, msg, api.CodeTooLarge)
	}
	if recs, _ := d.List(); len(recs) != 0 {
		t.Errorf("%d jobs after refused requests, want none", len(recs))
	}
	if status, _ := rawHTTP(t, apiSock, "GET /healthz HTTP/1.1\r\nHost: unitrun\r\nConnection: close\r\n\r\n"); status != 200 {
		t.Errorf("healthz after the attacks: %d", status)
	}
}

// TestSecurityCallFlood has one caller call faster than jobs end: once
// max_live_jobs are live, or max_queue calls wait for an exclusive op, the
// daemon refuses with busy, naming the limit, and starts no more units.
func TestSecurityCallFlood(t *testing.T) {
	d, dir := newTestScheduler(t, systemdtest.Conn(t), securityOps+"\n[limits]\nmax_live_jobs = 3\n")
	apiSock, _ := serveTest(t, d)
	hc := unixHTTP(apiSock)
	var ids []string
	for i := range 6 {
		resp, err := hc.Post("http://unitrun/v1/ops/argv", "application/json", strings.NewReader(fmt.Sprintf(`{"args": ["%d"]}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case i < 3 && resp.StatusCode == 202:
			var a struct{ ID string }
			json.Unmarshal(data, &a)
			ids = append(ids, a.ID)
		case i >= 3 && resp.StatusCode == 409 && errorCode(t, string(data)) == api.CodeBusy && strings.Contains(string(data), "max_live_jobs"):
		default:
			t.Errorf("call %d: %s %s", i, resp.Status, data)
		}
	}
	os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644)
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		d.Wait(ctx, id)
		cancel()
	}
	if recs, _ := d.List(); len(recs) != 3 {
		t.Errorf("%d jobs, want the 3 accepted", len(recs))
	}

	// An exclusive op's queue: one job runs, max_queue wait, the next call
	// is refused.
	d, _ = newTestScheduler(t, systemdtest.Conn(t), "\n[limits]\nmax_queue = 1\n")
	var accepted []string
	for i, arg := range []string{"a", "b", "c"} {
		r, err := d.Call(context.Background(), root, "excl", []string{arg})
		var e *api.Error
		switch {
		case i < 2 && err == nil:
			accepted = append(accepted, r.ID)
		case i == 2 && errors.As(err, &e) && e.Code == api.CodeBusy && strings.Contains(e.Message, "max_queue"):
		default:
			t.Errorf("excl %s: %+v, %v", arg, r, err)
		}
	}
	for _, id := range accepted {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		d.Wait(ctx, id)
		cancel()
	}
}

// TestSecurityOutputFlood runs an op that prints 32 MiB: the output goes
// to the job's log, not through the daemon, and the record keeps only
// output_tail_bytes of it.
func TestSecurityOutputFlood(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), `
[[op]]
name = "flood"
exec = ["/bin/sh", "-c", "head -c 33554432 /dev/zero | tr '\\0' 'z'; echo END"]

[limits]
output_tail_bytes = 1024
`)
	r := call(t, d, "flood")
	if r.State != api.StateSucceeded || len(r.OutputTail) != 1024 || !strings.HasSuffix(r.OutputTail, "zzzzEND\n") {
		t.Errorf("record: %s, tail of %d bytes ending %q: want succeeded, 1024 bytes", r.State, len(r.OutputTail), r.OutputTail[max(0, len(r.OutputTail)-8):])
	}
	if fi, err := os.Stat(d.store.disk().OutputPath(r.ID)); err != nil || fi.Size() != 32<<20+4 {
		t.Errorf("output log: %v, %v: want all %d bytes", fi, err, 32<<20+4)
	}
}

// TestSecuritySlowClients opens connections that send part of a request
// and then nothing: an HTTP header, an HTTP body and a SEQPACKET request.
// The daemon gives up on each (ReadHeaderTimeout, the body's read deadline,
// seqpacketReadTimeout) and closes the connection, so a slow caller cannot
// hold a connection and its goroutine for ever. The test's own deadline
// only bounds how long a failure takes to show.
func TestSecuritySlowClients(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), securityOps)
	apiSock, argv := serveTest(t, d)
	// closed waits until the daemon closes c, after the bytes it answers.
	closed := func(t *testing.T, c net.Conn, within time.Duration) string {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(within))
		data, err := io.ReadAll(c)
		if err != nil {
			t.Errorf("connection still open after %v: %v", within, err)
		}
		return string(data)
	}
	t.Run("header", func(t *testing.T) {
		t.Parallel()
		c, _ := net.Dial("unix", apiSock)
		defer c.Close()
		io.WriteString(c, "POST /v1/ops/argv HTTP/1.1\r\nHost: unitrun\r\n")
		closed(t, c, 3*config.DefaultLimits().ReadHeaderTimeout)
	})
	t.Run("body", func(t *testing.T) {
		t.Parallel()
		c, _ := net.Dial("unix", apiSock)
		defer c.Close()
		io.WriteString(c, "POST /v1/ops/argv HTTP/1.1\r\nHost: unitrun\r\nContent-Length: 100\r\n\r\n{\"args\": [")
		if got := closed(t, c, 3*front.BodyReadTimeout); !strings.Contains(got, api.CodeBadRequest) {
			t.Errorf("answer to a stalled body: %q, want a %s error", got, api.CodeBadRequest)
		}
	})
	t.Run("seqpacket", func(t *testing.T) {
		t.Parallel()
		c, _ := net.Dial("unixpacket", argv)
		defer c.Close()
		if got := closed(t, c, 3*config.DefaultLimits().ReadHeaderTimeout); !strings.Contains(got, api.CodeBadRequest) {
			t.Errorf("answer to a missing request: %q, want a %s error", got, api.CodeBadRequest)
		}
	})
	t.Cleanup(func() {
		if recs, _ := d.List(); len(recs) != 0 {
			t.Errorf("%d jobs after stalled requests, want none", len(recs))
		}
	})
}

// TestSecurityLogInjection sends line breaks and terminal escapes in every
// place a caller controls (op name, job id, query, args, body, SEQPACKET
// fields, the op's output), restarts the daemon while such a job runs (so
// that Recover reads its record) and checks that the daemon's log holds no
// line a caller forged and no control character but the line ends.
func TestSecurityLogInjection(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	dmn := systemdtest.NewDaemon(t, strings.ReplaceAll(securityOps, "@DIR@/gate", gate))
	// Read once the daemon has exited: cmd.Wait ends the copying.
	var log bytes.Buffer
	dmn.Stderr = &log
	dmn.Start(t)
	const forged = "FORGED unitrun daemon: job 0 done"
	evil := []string{"\n" + forged, "\r" + forged, "\x1b[2K\r" + forged, "\x1b]0;title\x07", "\x00" + forged}
	enc := func(s string) string {
		return strings.NewReplacer("\n", "%0A", "\r", "%0D", "\x1b", "%1B", "\x07", "%07", "\x00", "%00", " ", "%20").Replace(s)
	}
	hc := unixHTTP(dmn.API)
	for _, e := range evil {
		for _, path := range []string{"/v1/ops/" + enc(e), "/v1/jobs/" + enc(e), "/v1/jobs/" + enc(e) + "/logs", "/v1/jobs?x=" + enc(e) + ";" + enc(e), "/" + enc(e)} {
			for _, method := range []string{"GET", "POST", "DELETE"} {
				req, _ := http.NewRequest(method, "http://unitrun"+path, strings.NewReader(`{"args": [`+strconv.Quote(e)+`], "x`+enc(e)+`": 1}`))
				if resp, err := hc.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		}
		body, _ := json.Marshal(map[string]any{"args": []string{e, forged}})
		if resp, err := hc.Post("http://unitrun/v1/ops/argv", "application/json", bytes.NewReader(body)); err == nil {
			resp.Body.Close()
		}
		for _, pkt := range [][]byte{[]byte("argv\x00" + e + "\x00"), []byte(e + "\x00"), []byte("\xff" + e)} {
			c, err := net.Dial("unixpacket", dmn.Argv)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(pkt)
			c.Close()
		}
	}
	// Restart with the jobs running, then let them end.
	dmn.Cmd.Process.Signal(syscall.SIGTERM)
	dmn.Cmd.Wait()
	dmn.Start(t)
	os.WriteFile(gate, nil, 0o644)
	waitAll := func() {
		for range 500 {
			resp, err := hc.Get("http://unitrun/v1/jobs")
			if err != nil {
				t.Fatal(err)
			}
			var recs []api.Record
			json.NewDecoder(resp.Body).Decode(&recs)
			resp.Body.Close()
			if !slices.ContainsFunc(recs, func(r api.Record) bool { return !r.Done() }) && len(recs) > 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("jobs did not end")
	}
	waitAll()
	dmn.Cmd.Process.Signal(syscall.SIGTERM)
	dmn.Cmd.Wait()
	for i, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, forged) && !strings.Contains(line, `\n`+forged) && !strings.Contains(line, `\r`+forged) && !strings.Contains(line, `\x00`+forged) && !strings.Contains(line, `\u0000`+forged) {
			t.Errorf("log line %d holds a forged line: %q", i+1, line)
		}
		if j := strings.IndexFunc(line, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }); j >= 0 {
			t.Errorf("log line %d holds control character %q: %q", i+1, line[j], line)
		}
	}
}

// openFDs counts the test process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestSecurityPassedFDs sends file descriptors (SCM_RIGHTS) with requests
// on both sockets, many times: the daemon, which reads no ancillary data,
// holds none of them afterwards, and the requests are served as if none
// were sent.
func TestSecurityPassedFDs(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), securityOps)
	apiSock, argv := serveTest(t, d)
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fds := make([]int, 250)
	for i := range fds {
		fds[i] = int(f.Fd())
	}
	rights := syscall.UnixRights(fds...)
	// Settle the fds the first connections open (the manager's, the store's).
	rawHTTP(t, apiSock, "GET /healthz HTTP/1.1\r\nHost: unitrun\r\nConnection: close\r\n\r\n")
	before := openFDs(t)
	for range 20 {
		for _, sock := range []struct{ network, path, req string }{
			{"unix", apiSock, "GET /v1/jobs HTTP/1.1\r\nHost: unitrun\r\nConnection: close\r\n\r\n"},
			{"unixpacket", argv, "nosuch\x00"},
		} {
			c, err := net.DialUnix(sock.network, nil, &net.UnixAddr{Name: sock.path, Net: sock.network})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.WriteMsgUnix([]byte(sock.req), rights, nil); err != nil {
				t.Fatal(err)
			}
			resp, _ := io.ReadAll(c)
			c.Close()
			if !strings.Contains(string(resp), "200 OK") && !strings.Contains(string(resp), api.CodeUnknownOp) {
				t.Errorf("%s with passed fds: %q", sock.network, resp)
			}
		}
	}
	// The daemon's goroutines close their connections after answering.
	for range 100 {
		if openFDs(t) <= before {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("%d fds open after the requests, %d before: the daemon kept passed fds", openFDs(t), before)
}

// TestSecurityStateModes runs a job that fails and checks the modes that
// keep its files to the daemon: the state and output dirs 0700, the
// records log and the job's output log 0600, and the store's version file
// 0600.
func TestSecurityStateModes(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	r := call(t, d, "echo", "x", "3")
	d.Close()
	want := map[string]os.FileMode{
		d.store.dir: 0o700 | os.ModeDir, filepath.Join(d.store.dir, "output"): 0o700 | os.ModeDir,
		filepath.Join(d.store.dir, "records.log"): 0o600, d.store.disk().OutputPath(r.ID): 0o600,
		filepath.Join(d.store.dir, "store-version"): 0o600,
	}
	for path, mode := range want {
		if fi, err := os.Lstat(path); err != nil {
			t.Errorf("%s: %v; want mode %v", path, err, mode)
		} else if fi.Mode() != mode {
			t.Errorf("%s: mode %v; want %v", path, fi.Mode(), mode)
		}
	}
}

// TestSecurityRebootMarkerSymlink plants the op's reboot marker as a
// symlink to a file that must stay: the job reports the reboot, the link
// is removed and its target is untouched.
func TestSecurityRebootMarkerSymlink(t *testing.T) {
	d, dir := newTestScheduler(t, systemdtest.Conn(t), `
[[op]]
name = "marked"
exec = ["/bin/true"]
reboot_marker = "@DIR@/marker"
`)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	if err := os.Symlink(victim, filepath.Join(dir, "marker")); err != nil {
		t.Fatal(err)
	}
	if r := call(t, d, "marked"); !r.RebootRequired {
		t.Errorf("record %+v: want reboot_required", r)
	}
	if _, err := os.Lstat(filepath.Join(dir, "marker")); err == nil {
		t.Error("the marker is still there")
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Errorf("the marker's target: %q, %v; want it untouched", b, err)
	}
}

// TestSecurityBodyDeadlineOnlyForBody calls, waiting, an op that stops
// when its caller goes away and runs longer than the body's read deadline:
// the deadline ends with the body, so the call is not taken for a
// disconnect and the job succeeds.
func TestSecurityBodyDeadlineOnlyForBody(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), fmt.Sprintf(`
[[op]]
name = "long"
exec = ["/bin/sleep", "%d"]
on_disconnect = "stop"
`, int(front.BodyReadTimeout/time.Second)+2))
	apiSock, _ := serveTest(t, d)
	resp, err := unixHTTP(apiSock).Post("http://unitrun/v1/ops/long", "application/json", strings.NewReader(`{"wait": true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rec api.Record
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || resp.StatusCode != 200 || rec.State != api.StateSucceeded {
		t.Errorf("call waiting past the body's deadline: %s %+v, %v: want 200 and a succeeded record", resp.Status, rec, err)
	}
}

// The names of a job's files in a directory laid out as a job of store
// version 1, which TestSecurityJobIDTraversal plants.
const (
	recordFile = "record.jsonl"
	outputFile = "output.log"
)

// disk returns the store's implementation, for the tests that look at
// its files.
func (s *Store) disk() *store.Store { return s.recordStore.(*store.Store) }
