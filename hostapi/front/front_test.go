package front_test

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
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
)

func TestHTTPCurl(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	apiSock, _ := serveTest(t, d)
	const host = "http://unitrun"

	if status, body := daemontest.Curl(t, apiSock, nil, host+"/healthz"); status != 200 || !strings.Contains(body, `"ok":true`) {
		t.Errorf("healthz: %d %s", status, body)
	}
	status, body := daemontest.Curl(t, apiSock, nil, "-X", "POST", "-d", `{"args": ["hi", "4"], "wait": true}`, host+"/v1/ops/echo")
	var rec api.Record
	if err := json.Unmarshal([]byte(body), &rec); err != nil || status != 200 || rec.State != api.StateFailed || daemontest.ExitCode(&rec) != 4 {
		t.Fatalf("call: %d %s: want 200 and a failed record with exit code 4", status, body)
	}
	if status, body := daemontest.Curl(t, apiSock, nil, host+"/v1/jobs/"+rec.ID+"/logs?follow=1"); status != 200 || body != "out:hi:uid:0\nerr\n" {
		t.Errorf("logs: %d %q", status, body)
	}
	status, body = daemontest.Curl(t, apiSock, nil, "-X", "POST", "-d", `{"args": ["3"]}`, host+"/v1/ops/sleep")
	var accepted struct{ ID string }
	if json.Unmarshal([]byte(body), &accepted); status != 202 || accepted.ID == "" {
		t.Fatalf("call without wait: %d %s: want 202 and an id", status, body)
	}
	status, body = daemontest.Curl(t, apiSock, nil, "-X", "DELETE", host+"/v1/jobs/"+accepted.ID)
	if json.Unmarshal([]byte(body), &rec); status != 200 || rec.State != api.StateCanceled {
		t.Errorf("cancel: %d %s", status, body)
	}
	if status, body = daemontest.Curl(t, apiSock, nil, host+"/v1/jobs"); status != 200 || strings.Count(body, `"id"`) != 2 {
		t.Errorf("jobs: %d %s: want the two jobs", status, body)
	}

	setpriv := []string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"}
	errs := []struct {
		as     []string
		args   []string
		status int
		code   string
	}{
		{nil, []string{"-X", "POST", host + "/v1/ops/nosuch"}, 404, api.CodeUnknownOp},
		{nil, []string{host + "/v1/jobs/20261202T142501Z-0123abcd"}, 404, api.CodeNotFound},
		{nil, []string{host + "/v1/jobs/..%2f..%2fetc"}, 404, api.CodeNotFound},
		{nil, []string{"-X", "POST", "-d", `{"args": ["x; reboot"]}`, host + "/v1/ops/sleep"}, 400, api.CodeBadArgs},
		{nil, []string{"-X", "POST", "-d", `{"argz": []}`, host + "/v1/ops/sleep"}, 400, api.CodeBadRequest},
		{nil, []string{"-X", "POST", "-d", `{"args": ["` + strings.Repeat("x", 70000) + `"]}`, host + "/v1/ops/sleep"}, 413, api.CodeTooLarge},
		{setpriv, []string{"-X", "POST", "-d", `{"wait": true}`, host + "/v1/ops/echo"}, 403, api.CodeUnauthorized},
		{setpriv, []string{host + "/v1/jobs/" + rec.ID}, 404, api.CodeNotFound},
		{nil, []string{host + "/v1/jobs/" + rec.ID + "/logs?offset=-1"}, 400, api.CodeBadRequest},
		{nil, []string{host + "/v1/jobs/" + rec.ID + "/logs?follow=yes"}, 400, api.CodeBadRequest},
	}
	for _, tt := range errs {
		status, body := daemontest.Curl(t, apiSock, tt.as, tt.args...)
		if status != tt.status || daemontest.ErrorCode(t, body) != tt.code {
			t.Errorf("%q: %d %s, want %d and code %s", tt.args, status, body, tt.status, tt.code)
		}
	}
	if status, body := daemontest.Curl(t, apiSock, setpriv, "-X", "POST", "-d", `{"wait": true}`, host+"/v1/ops/nobody"); status != 200 || !strings.Contains(body, `"state":"succeeded"`) {
		t.Errorf("op allowed to uid 65534, called by it: %d %s", status, body)
	}
}

// A known path with a method it is not served with is answered 405
// method_not_allowed, with an Allow header naming its methods, not 404; a
// path not served at all stays 404 not_found.
func TestHTTPWrongMethod(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	apiSock, _ := serveTest(t, d)
	const host = "http://unitrun"
	headers := filepath.Join(t.TempDir(), "headers")
	for _, tt := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/v1/ops/echo", 405, api.CodeMethodNotAllowed, "POST"},
		{"PUT", "/v1/ops/echo", 405, api.CodeMethodNotAllowed, "POST"},
		{"POST", "/v1/jobs/20261202T142501Z-0123abcd", 405, api.CodeMethodNotAllowed, "DELETE, GET, HEAD"},
		{"DELETE", "/v1/ops", 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"POST", "/healthz", 405, api.CodeMethodNotAllowed, "GET, HEAD"},
		{"GET", "/v2/nothing", 404, api.CodeNotFound, ""},
	} {
		status, body := daemontest.Curl(t, apiSock, nil, "-X", tt.method, "-D", headers, host+tt.path)
		if status != tt.status || daemontest.ErrorCode(t, body) != tt.code {
			t.Errorf("%s %s: %d %s, want %d and code %s", tt.method, tt.path, status, body, tt.status, tt.code)
		}
		h, err := os.ReadFile(headers)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(h)), nil)
		if err != nil {
			t.Fatalf("%s %s: headers %q: %v", tt.method, tt.path, h, err)
		}
		if allow := resp.Header.Get("Allow"); allow != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.path, allow, tt.allow)
		}
	}
}

// TestSeqpacketPython speaks the SEQPACKET wire format from Python.
func TestSeqpacketPython(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	_, argv := serveTest(t, d)
	const script = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send("\0".join(sys.argv[2:]).encode() + b"\0")
print(repr(s.recv(65536).decode().split("\0")))
`
	tests := []struct {
		args []string
		want string // the response as Python prints it, with the job id as ID
	}{
		{[]string{"echo", "py"}, `['ok', 'ID', 'exit status 0']`},
		{[]string{"echo", "py", "9"}, `['error', 'ID', 'exit status 9']`},
		{[]string{"reboot"}, `['ok', 'ID', 'exit status 0; reboot required']`},
		{[]string{"nosuch"}, `['error', '', 'unknown_op: op "nosuch": no such op']`},
	}
	for _, tt := range tests {
		out, err := exec.Command("python3", append([]string{"-c", script, argv}, tt.args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("python: %v\n%s", err, out)
		}
		got := strings.TrimSpace(string(out))
		var fields []string
		json.Unmarshal([]byte(strings.ReplaceAll(got, "'", `"`)), &fields)
		if len(fields) == 3 && fields[1] != "" {
			if _, err := d.Get(fields[1]); err != nil {
				t.Errorf("%q: job id %q: %v", tt.args, fields[1], err)
			}
			got = strings.Replace(got, fields[1], "ID", 1)
		}
		if got != tt.want {
			t.Errorf("%q: response %s, want %s", tt.args, got, tt.want)
		}
	}
}

// TestHTTPConcurrentCallers runs 50 calls at once, each with its own args
// and exit status, and checks that each caller gets its own outcome.
func TestHTTPConcurrentCallers(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	apiSock, _ := serveTest(t, d)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", apiSock)
	}}}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"args": ["c%d", "%d"], "wait": true}`, i, i%7)
			resp, err := hc.Post("http://unitrun/v1/ops/echo", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			var rec api.Record
			if err := json.Unmarshal(data, &rec); err != nil || resp.StatusCode != 200 {
				t.Errorf("caller %d: %d %s", i, resp.StatusCode, data)
				return
			}
			if daemontest.ExitCode(&rec) != i%7 || rec.OutputTail != fmt.Sprintf("out:c%d:uid:0\nerr\n", i) {
				t.Errorf("caller %d: exit code %d, output %q", i, daemontest.ExitCode(&rec), rec.OutputTail)
			}
		}()
	}
	wg.Wait()
}

// TestHTTPDisconnect drops a caller that waits for its job: the job of an
// op with on_disconnect "stop" is canceled, one with "continue" goes on;
// a waiter on /wait from the calling process counts as the caller.
func TestHTTPDisconnect(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	apiSock, _ := serveTest(t, d)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", apiSock)
	}}}
	// started returns the id of the op's job once its unit runs.
	started := func(op string) string {
		for {
			recs, _ := d.List()
			for _, r := range recs {
				if tail := daemontest.Output(d, r.ID); r.Op == op && tail == "started\n" && !r.Done() {
					return r.ID
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// callAndDrop calls the op waiting, then drops the connection.
	callAndDrop := func(op string) string {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://unitrun/v1/ops/"+op, strings.NewReader(`{"wait": true}`))
		go hc.Do(req)
		return started(op)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()

	id := callAndDrop("linger")
	time.Sleep(200 * time.Millisecond)
	if r, err := d.Get(id); err != nil || r.State != api.StateRunning {
		t.Errorf("linger: %+v, %v: want running after its caller went away", r, err)
	}
	d.Cancel(wctx, id)

	id = callAndDrop("stopme")
	if r, err := d.Wait(wctx, id); err != nil || r.State != api.StateCanceled {
		t.Errorf("stopme: %+v, %v: want canceled when its caller went away", r, err)
	}

	resp, err := hc.Post("http://unitrun/v1/ops/stopme", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id = started("stopme")
	// Whether the dropped /wait request reached the daemon cannot be seen
	// from here: drop waiters until the job ends.
	for d.Done(id) != nil && wctx.Err() == nil {
		ctx, cancel := context.WithTimeout(wctx, 100*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://unitrun/v1/jobs/"+id+"/wait", nil)
		hc.Do(req)
		cancel()
		select {
		case <-d.Done(id):
		case <-time.After(100 * time.Millisecond):
		}
	}
	if r, err := d.Get(id); err != nil || r.State != api.StateCanceled {
		t.Errorf("stopme waited on /wait: %+v, %v: want canceled when its waiter went away", r, err)
	}
}

// TestBindToCaller calls a bind_to_caller op from a process in a unit of
// the manager, then stops that unit: the op's unit stops with it. A call
// made again with the first call's key gets that job, though the caller's
// unit is gone.
func TestBindToCaller(t *testing.T) {
	conn := systemdtest.Conn(t)
	d, _ := newTestDaemon(t, conn, "")
	apiSock, _ := serveTest(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	caller := job.CommandContext(ctx, conn, "/bin/sh", "-c", "curl -sS --unix-socket "+apiSock+" -d '{\"key\": \"bound-1\"}' http://unitrun/v1/ops/bound && exec sleep 30")
	caller.Name = "unitrun-test-caller.service"
	if err := caller.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	for id == "" {
		recs, _ := d.List()
		for _, r := range recs {
			if tail := daemontest.Output(d, r.ID); r.Op == "bound" && tail == "started\n" {
				id = r.ID
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel() // stops the caller's unit
	caller.Wait()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	r, err := d.Wait(wctx, id)
	if err != nil || r.State != api.StateFailed || r.Signal != "TERM" {
		t.Errorf("bound op after its caller's unit stopped: %+v, %v: want failed by SIGTERM", r, err)
	}
	again, err := d.CallKeyed(context.Background(), root, "bound", nil, "bound-1")
	if err != nil || again.ID != id || again.State != api.StateFailed {
		t.Errorf("bound op called again with its key from outside any unit: %+v, %v: want job %s, failed", again, err, id)
	}
	_, err = d.Call(context.Background(), root, "bound", nil)
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeNoCallerUnit {
		t.Errorf("bound op called from outside any unit: %v, want %s", err, api.CodeNoCallerUnit)
	}
}

// TestSeqpacketUnauthorized calls over SEQPACKET as uid 65534.
func TestSeqpacketUnauthorized(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	_, argv := serveTest(t, d)
	const script = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(b"echo\0")
print(s.recv(65536).decode().split("\0")[0:2])
`
	out, err := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/python3", "-c", script, argv).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "['error', '']" {
		t.Errorf("python as uid 65534: %s, %v: want an error and no job", out, err)
	}
}
