// Package client is the Go client of the unitrun host API (package
// hostapi): what an agent in a container imports to run allow-listed host
// operations through the daemon's HTTP/JSON unix socket.
//
// Errors the daemon returns are *api.Error values with a stable Code.
// Wait survives restarts of the daemon: it reconnects and resumes waiting,
// since a job's unit runs in systemd and the restarted daemon re-attaches
// to it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/unitrun/unitrun/api"
)

// DefaultSocket is the socket of the shipped unitrun.socket unit
// (api.DefaultSocket).
const DefaultSocket = api.DefaultSocket

// Client talks to one daemon socket. It may be used by several goroutines
// at once.
type Client struct {
	// NotReached, when set before the Client is used, is called by Wait
	// and a followed Logs, in their goroutine and at most once per call,
	// when they have tried to reach the daemon for NotReachedAfter
	// without an answer and go on trying: a caller can say what it
	// waits for.
	NotReached func()

	socket string
	hc     *http.Client
}

// NotReachedAfter is how long Wait and a followed Logs try to reach the
// daemon, without an answer, before they call Client.NotReached. They
// call it at the first try that fails after that long, about 1.5 s
// after the first failure, given the delays between tries (see Retry).
const NotReachedAfter = 1500 * time.Millisecond

// absence tells notify, once, when tries have failed to reach the daemon
// for NotReachedAfter.
type absence struct {
	notify func()
	since  time.Time // when the tries began to fail; zero while the daemon answers
}

// note takes the outcome err of a try. An error of the daemon's own is an
// answer.
func (a *absence) note(err error) {
	var e *api.Error
	switch {
	case a.notify == nil:
	case err == nil || errors.As(err, &e):
		a.since = time.Time{}
	case a.since.IsZero():
		a.since = time.Now()
	case time.Since(a.since) >= NotReachedAfter:
		a.notify()
		a.notify = nil
	}
}

// New returns a client of the daemon listening at socket.
func New(socket string) *Client {
	return &Client{socket: socket, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
	}}}
}

// Ops returns the daemon's ops, each saying whether this caller may call it.
func (c *Client) Ops(ctx context.Context) ([]api.OpInfo, error) {
	var ops []api.OpInfo
	return ops, c.do(ctx, http.MethodGet, "/v1/ops", nil, &ops)
}

// Call starts the op with args and returns the job's id once the daemon
// accepted it (it may be queued behind a running job of an exclusive op,
// or be that job when the args are the same). A call whose answer is lost
// (the daemon restarted) may or may not have started a job: CallKeyed
// knows.
func (c *Client) Call(ctx context.Context, op string, args []string) (string, error) {
	return c.call(ctx, op, args, "")
}

// CallKeyed is Call with an idempotency key (see api.CallRequest.Key):
// the daemon starts at most one job per op, caller uid and key, and
// answers a repeated call with that job's id. So CallKeyed, unlike Call,
// calls again when the daemon cannot be reached or goes away before it
// answers, as Wait does, until ctx ends; errors the daemon returns end it
// at once. With key "" it is Call.
func (c *Client) CallKeyed(ctx context.Context, op string, args []string, key string) (string, error) {
	if key == "" {
		return c.call(ctx, op, args, "")
	}
	var id string
	err := Retry(ctx, func() error {
		var err error
		id, err = c.call(ctx, op, args, key)
		return err
	})
	return id, err
}

func (c *Client) call(ctx context.Context, op string, args []string, key string) (string, error) {
	if args == nil {
		args = []string{}
	}
	body, err := json.Marshal(api.CallRequest{Args: args, Key: key})
	if err != nil {
		return "", err
	}
	var resp struct{ ID string }
	if err := c.do(ctx, http.MethodPost, "/v1/ops/"+url.PathEscape(op), body, &resp); err != nil {
		return "", err
	}
	return resp.ID, nil
}

// A WaitingCall is a call CallWaiting made: its job's id, and the
// connection that waits for its end.
type WaitingCall struct {
	ID   string
	c    *Client
	done chan struct{} // closed once the call's answer came, or its connection broke
	rec  *api.Record
	err  error
}

// CallWaiting calls the op as CallKeyed does, with "wait": true, and
// returns once the daemon has accepted the call (api.PreferEarlyID names
// the job), keeping the call's connection open until the job ends: the
// daemon knows then, from the first moment, that its caller waits, and
// cancels a job whose op has on_disconnect "stop" once that connection
// goes, however this process went. Canceling ctx closes it. The call's
// Wait returns the final record.
func (c *Client) CallWaiting(ctx context.Context, op string, args []string, key string) (*WaitingCall, error) {
	if key == "" {
		return c.callWaiting(ctx, op, args, key)
	}
	var w *WaitingCall
	err := Retry(ctx, func() error {
		var err error
		w, err = c.callWaiting(ctx, op, args, key)
		return err
	})
	return w, err
}

func (c *Client) callWaiting(ctx context.Context, op string, args []string, key string) (*WaitingCall, error) {
	if args == nil {
		args = []string{}
	}
	body, err := json.Marshal(api.CallRequest{Args: args, Key: key, Wait: true})
	if err != nil {
		return nil, err
	}
	accepted := make(chan string, 1)
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if id, ok := strings.CutPrefix(h.Get("Location"), "/v1/jobs/"); ok && code == http.StatusEarlyHints {
			select {
			case accepted <- id:
			default:
			}
		}
		return nil
	}}
	w := &WaitingCall{c: c, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var r api.Record
		w.err = c.doWith(httptrace.WithClientTrace(ctx, trace), http.MethodPost, "/v1/ops/"+url.PathEscape(op), body, &r,
			http.Header{"Prefer": {api.PreferEarlyID}})
		if w.err == nil {
			w.rec = &r
		}
	}()
	select {
	case w.ID = <-accepted:
		return w, nil
	case <-w.done:
		if w.err != nil {
			return nil, w.err
		}
		w.ID = w.rec.ID
		return w, nil
	}
}

// Wait returns the job's final record once it has ended: the call's own
// answer, or, when its connection broke first (the daemon restarted),
// what Client.Wait returns.
func (w *WaitingCall) Wait(ctx context.Context) (*api.Record, error) {
	select {
	case <-w.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var e *api.Error
	if w.err == nil || errors.As(w.err, &e) && e.Code != api.CodeInternal {
		return w.rec, w.err
	}
	return w.c.Wait(ctx, w.ID)
}

// Job returns the job's current record.
func (c *Client) Job(ctx context.Context, id string) (*api.Record, error) {
	var r api.Record
	return &r, c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), nil, &r)
}

// Jobs returns the records this caller may see, newest first, asking for
// them a page at a time.
func (c *Client) Jobs(ctx context.Context) ([]*api.Record, error) {
	all := []*api.Record{}
	for path := "/v1/jobs"; path != ""; {
		resp, err := c.send(ctx, http.MethodGet, path, nil)
		if err != nil {
			return nil, err
		}
		var page []*api.Record
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("GET %s: decoding the response: %w", path, err)
		}
		all = append(all, page...)
		path = nextPage(resp.Header.Get("Link"))
	}
	return all, nil
}

// nextPage returns the path that a Link header names as rel="next", or "".
func nextPage(link string) string {
	target, params, ok := strings.Cut(link, ";")
	if !ok || !strings.Contains(params, `rel="next"`) {
		return ""
	}
	return strings.Trim(strings.TrimSpace(target), "<>")
}

// Cancel cancels the job and returns its final record.
func (c *Client) Cancel(ctx context.Context, id string) (*api.Record, error) {
	var r api.Record
	return &r, c.do(ctx, http.MethodDelete, "/v1/jobs/"+url.PathEscape(id), nil, &r)
}

// Wait returns the job's final record once it has ended. When the daemon
// cannot be reached, or goes away while Wait waits (it was restarted), Wait
// reconnects, with delays growing from 50ms to 2s, until ctx ends, and
// calls c.NotReached once the daemon has not answered for NotReachedAfter;
// errors the daemon returns (such as an unknown job) end it at once.
func (c *Client) Wait(ctx context.Context, id string) (*api.Record, error) {
	var r api.Record
	a := absence{notify: c.NotReached}
	err := Retry(ctx, func() error {
		r = api.Record{}
		err := c.do(ctx, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/wait", nil, &r)
		a.note(err)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Retry calls fn until it succeeds, ctx ends, or it returns an error of
// the daemon's other than CodeInternal; after a failure to reach the
// daemon (it is restarting) or CodeInternal it waits, with delays growing
// from 50ms to 2s. It is how Wait and the calls reconnect; use it for a
// request that may be made again, such as Ops or Cancel (a job canceled
// once is answered with its final record).
func Retry(ctx context.Context, fn func() error) error {
	delay := 50 * time.Millisecond
	for {
		err := fn()
		var e *api.Error
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &e) && e.Code != api.CodeInternal:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// Logs copies the job's output to w: what it has written so far, or with
// follow everything until the job ends. A followed stream that breaks, or
// ends while the job has not (the daemon was restarted), is resumed where
// it stopped, reconnecting as Wait does (c.NotReached included), so every
// byte reaches w once.
func (c *Client) Logs(ctx context.Context, id string, follow bool, w io.Writer) error {
	base := "/v1/jobs/" + url.PathEscape(id) + "/logs"
	if !follow {
		resp, err := c.send(ctx, http.MethodGet, base, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(w, resp.Body)
		return err
	}
	var offset int64
	delay := 50 * time.Millisecond
	a := absence{notify: c.NotReached}
	for {
		resp, err := c.send(ctx, http.MethodGet, base+"?follow=1&offset="+strconv.FormatInt(offset, 10), nil)
		a.note(err)
		var e *api.Error
		if errors.As(err, &e) && e.Code != api.CodeInternal {
			return err // the daemon's own answer, such as an unknown job
		}
		if err == nil {
			cw := &countingWriter{w: w}
			_, cerr := io.Copy(cw, resp.Body)
			resp.Body.Close()
			offset += cw.n
			if cw.err != nil {
				return cw.err // w refused: not the stream's fault
			}
			if cerr == nil {
				if rec, err := c.Job(ctx, id); err == nil && rec.Done() {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// countingWriter counts what reaches w and keeps w's own error apart from
// the stream's.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}

// do sends a request and decodes the JSON response into out.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	return c.doWith(ctx, method, path, body, out, nil)
}

// doWith is do with more request headers.
func (c *Client) doWith(ctx context.Context, method, path string, body []byte, out any, header http.Header) error {
	resp, err := c.sendWith(ctx, method, path, body, header)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decoding the response: %w", method, path, err)
	}
	return nil
}

// send sends a request and returns a 2xx response; any other status is
// returned as the *api.Error of its body.
func (c *Client) send(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	return c.sendWith(ctx, method, path, body, nil)
}

// sendWith is send with more request headers.
func (c *Client) sendWith(ctx context.Context, method, path string, body []byte, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://unitrun"+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("unitrun daemon at %s: %w", c.socket, reason(err))
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var e api.ErrorBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e); err != nil || e.Error == nil {
		return nil, fmt.Errorf("%s %s: HTTP status %s", method, path, resp.Status)
	}
	return nil, e.Error
}

// reason is the cause of a failed request without the layers of Go's
// HTTP client around it (`Get "http://unitrun/v1/ops": dial unix
// /run/unitrun/api.sock: connect: no such file or directory` becomes "no
// such file or directory"), since the error names the socket itself.
func reason(err error) error {
	for {
		switch e := err.(type) {
		case *url.Error:
			err = e.Err
		case *net.OpError:
			err = e.Err
		case *os.SyscallError:
			err = e.Err
		default:
			return err
		}
	}
}
