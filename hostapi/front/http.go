package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
)

// callerKey keys the peer credentials that NewHTTPServer stashes in each
// connection's context.
type callerKey struct{}

type peer struct {
	caller core.Caller
	conn   *guardConn
	err    error
}

// NewHTTPServer returns the HTTP/JSON front end of c, to serve with
// ServeHTTP on a unix stream socket. Each connection's peer credentials
// are read once, when it is accepted, and authorize every request on it.
//
// Endpoints:
//
//	GET    /healthz                  {"ok": true}
//	GET    /metrics                  Prometheus metrics (core.Core.Metrics), to any peer that may connect
//	GET    /v1/ops                   the ops, with whether the caller may call each
//	POST   /v1/ops/{name}            body CallRequest; 202 {"id": ...}, or 200 and the final record with "wait": true
//	                                 (after a 103 naming the job in Location with "Prefer: early-id", api.PreferEarlyID)
//	GET    /v1/jobs                  a page of the records the caller may see, newest first; ?limit=N&after=CURSOR, Link: <...>; rel="next"
//	GET    /v1/jobs/{id}             the record
//	GET    /v1/jobs/{id}/wait        the record once the job has ended
//	GET    /v1/jobs/{id}/logs        the output log; ?follow=1 streams it until the job ends, ?offset=N starts at byte N
//	DELETE /v1/jobs/{id}             cancel; the record once the job has ended
//
// Errors are {"error": {"code": ..., "message": ...}} with the status of
// (*api.Error).HTTPStatus; a path above with another method is 405
// method_not_allowed, with an Allow header (route). A caller sees the
// jobs it started and those of ops it may call; root sees all.
func NewHTTPServer(c core.Core) *http.Server {
	h := &httpAPI{c: c}
	limits := c.Config().Limits
	mux := http.NewServeMux()
	route(mux, []endpoint{
		{"GET", "/healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
		})},
		{"GET", "/metrics", c.Metrics()},
		{"GET", "/v1/ops", http.HandlerFunc(h.ops)},
		{"POST", "/v1/ops/{name}", http.HandlerFunc(h.call)},
		{"GET", "/v1/jobs", http.HandlerFunc(h.jobs)},
		{"GET", "/v1/jobs/{id}", http.HandlerFunc(h.job)},
		{"GET", "/v1/jobs/{id}/wait", http.HandlerFunc(h.wait)},
		{"GET", "/v1/jobs/{id}/logs", http.HandlerFunc(h.logs)},
		{"DELETE", "/v1/jobs/{id}", http.HandlerFunc(h.cancel)},
	})
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		IdleTimeout:       limits.IdleTimeout,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			p := peer{err: errors.New("the connection was not accepted by the daemon's listener")}
			if gc, ok := c.(*guardConn); ok {
				p = peer{caller: gc.caller, conn: gc}
			}
			return context.WithValue(ctx, callerKey{}, p)
		},
	}
}

// endpoint is a method and path pattern of the API and its handler.
type endpoint struct {
	method, path string
	h            http.Handler
}

// route registers each endpoint on mux, and for each path a pattern of
// any method, which the method patterns take precedence over, that
// answers 405 method_not_allowed with an Allow header naming the path's
// methods, sorted (HEAD with GET, as the mux serves it); a path of no endpoint is
// answered 404 not_found.
func route(mux *http.ServeMux, endpoints []endpoint) {
	var paths []string
	allow := map[string][]string{}
	for _, e := range endpoints {
		mux.Handle(e.method+" "+e.path, e.h)
		if allow[e.path] == nil {
			paths = append(paths, e.path)
		}
		allow[e.path] = append(allow[e.path], e.method)
		if e.method == http.MethodGet {
			allow[e.path] = append(allow[e.path], http.MethodHead)
		}
	}
	for _, path := range paths {
		slices.Sort(allow[path])
		methods := strings.Join(allow[path], ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", methods)
			writeError(w, errorf(api.CodeMethodNotAllowed, fmt.Sprintf("%s %s: the method is not allowed; the path takes %s", r.Method, r.URL.Path, methods)))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(api.CodeNotFound, fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path)))
	})
}

// ServeHTTP serves srv, the server NewHTTPServer returned, on l (a "unix"
// listener) until srv is closed, as srv.Serve does, admitting each
// connection as the limits of s allow: one over them is answered 409
// busy, naming the limit, and closed at once.
func (s *Server) ServeHTTP(srv *http.Server, l net.Listener) error {
	return srv.Serve(s.guard(l, refuseHTTP))
}

// refuseHTTP answers a refused HTTP connection with err and closes it,
// after reading what the caller sent within refuseGrace when wait is set.
func refuseHTTP(c *net.UnixConn, err error, wait bool) {
	defer c.Close()
	if wait {
		c.SetReadDeadline(time.Now().Add(refuseGrace))
		c.Read(make([]byte, 4096))
	}
	e := asError(err)
	body, _ := json.Marshal(api.ErrorBody{Error: e})
	c.SetWriteDeadline(time.Now().Add(refuseGrace))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		e.HTTPStatus(), http.StatusText(e.HTTPStatus()), len(body)+1, body)
}

// BodyReadTimeout bounds the wait for the body of a call, as the limit
// read_header_timeout bounds the header's, so that a caller that stops
// sending does not hold its connection.
const BodyReadTimeout = 10 * time.Second

type httpAPI struct{ c core.Core }

// caller returns the request's peer, or writes an error.
func caller(w http.ResponseWriter, r *http.Request) (core.Caller, bool) {
	p, ok := r.Context().Value(callerKey{}).(peer)
	if !ok || p.err != nil {
		msg := "no peer credentials on the connection"
		if ok {
			msg = p.err.Error()
		}
		writeError(w, errorf(api.CodeUnauthorized, msg))
		return core.Caller{}, false
	}
	return p.caller, true
}

func (h *httpAPI) ops(w http.ResponseWriter, r *http.Request) {
	c, ok := caller(w, r)
	if !ok {
		return
	}
	ops := h.c.Ops()
	infos := make([]api.OpInfo, 0, len(ops))
	for _, op := range ops {
		info := api.OpInfo{Name: op.Name, Unit: op.Unit, ArgsMin: op.Args.Min, ArgsMax: op.Args.Max,
			Exclusive: op.Exclusive, Allowed: op.Allowed(c.UID, c.GIDs), OnDisconnect: op.OnDisconnect}
		if op.Args.Pattern != nil {
			info.ArgsPattern = op.Args.Pattern.String()
		}
		if op.Timeout > 0 {
			info.Timeout = op.Timeout.String()
		}
		infos = append(infos, info)
	}
	writeJSON(w, http.StatusOK, infos)
}

func (h *httpAPI) call(w http.ResponseWriter, r *http.Request) {
	c, ok := caller(w, r)
	if !ok {
		return
	}
	limit := h.c.Config().Limits.MaxRequestBytes
	// net/http clears the deadline once the body has been read to its end;
	// after an error it stays, so that the server, which discards the rest
	// of the body before it answers, does not wait for it for ever.
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(BodyReadTimeout))
	req, err := DecodeCallRequest(http.MaxBytesReader(w, r.Body, int64(limit)), limit)
	if err != nil {
		writeError(w, err)
		return
	}
	early := req.Wait && prefers(r, api.PreferEarlyID)
	ctx, stop := peerContext(r)
	rec, err := h.c.CallKeyed(ctx, c, r.PathValue("name"), req.Args, req.Key)
	if err != nil || !req.Wait || early {
		stop()
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+rec.ID)
	if !req.Wait {
		writeJSON(w, http.StatusAccepted, map[string]string{"id": rec.ID})
		return
	}
	// The waiting caller holds the job before it may learn its id.
	release := h.c.Hold(rec.ID)
	if early {
		w.Header().Set("Preference-Applied", api.PreferEarlyID)
		w.WriteHeader(http.StatusEarlyHints)
		// Watched again once written to: a caller gone meanwhile is
		// seen at once.
		ctx, stop = peerContext(r)
	}
	h.waitAndWrite(ctx, stop, w, rec.ID, release)
}

// prefers reports whether the request's Prefer headers (RFC 7240) name
// the preference token.
func prefers(r *http.Request, token string) bool {
	for _, h := range r.Header.Values("Prefer") {
		for p := range strings.SplitSeq(h, ",") {
			name, _, _ := strings.Cut(p, ";")
			if name, _, _ = strings.Cut(name, "="); strings.EqualFold(strings.TrimSpace(name), token) {
				return true
			}
		}
	}
	return false
}

// peerContext returns a context that ends when the request's caller has
// gone (watchHangup): net/http's request context ends as soon as the
// caller shuts down its writing side, which a caller that waits for its
// answer may do. stop ends the watch; call it before writing the answer.
func peerContext(r *http.Request) (ctx context.Context, stop func()) {
	if p, _ := r.Context().Value(callerKey{}).(peer); p.conn != nil {
		return watchHangup(p.conn.UnixConn)
	}
	return r.Context(), func() {}
}

// waitAndWrite waits for the job and writes its final record; ctx and
// stop are peerContext's. release ends the waiter's hold on the job
// (core.Core's Hold), that of a caller of the job, saying whether it went
// away first: when the last caller that holds the job goes away and its
// op has on_disconnect "stop", the job is canceled.
func (h *httpAPI) waitAndWrite(ctx context.Context, stop func(), w http.ResponseWriter, id string, release func(gone bool)) {
	rec, err := h.c.Wait(ctx, id)
	gone := err != nil && ctx.Err() != nil
	stop()
	release(gone)
	if gone {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// visible returns the job's record if the caller may see it, or writes an
// error: not_found for a job it may not see, as for one that does not
// exist.
func (h *httpAPI) visible(w http.ResponseWriter, r *http.Request) (*api.Record, bool) {
	c, ok := caller(w, r)
	if !ok {
		return nil, false
	}
	id := r.PathValue("id")
	rec, err := h.c.Get(id)
	if err == nil && !h.c.MaySee(c, rec) {
		err = errorf(api.CodeNotFound, fmt.Sprintf("job %q: no such job", id))
	}
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return rec, true
}

// jobs serves GET /v1/jobs: a page of the records the caller may see,
// newest first, at most ?limit= (default and most api.MaxPage) after the
// cursor ?after=; when there are more, the header Link names the next
// page (rel="next").
func (h *httpAPI) jobs(w http.ResponseWriter, r *http.Request) {
	c, ok := caller(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := api.MaxPage
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > api.MaxPage {
			writeError(w, errorf(api.CodeBadRequest, fmt.Sprintf("limit %q: must be a number from 1 to %d", s, api.MaxPage)))
			return
		}
		limit = n
	}
	recs, next, err := h.c.ListPage(r.Context(), c, q.Get("after"), limit)
	if err != nil {
		writeError(w, err)
		return
	}
	if next != "" {
		w.Header().Set("Link", fmt.Sprintf(`</v1/jobs?limit=%d&after=%s>; rel="next"`, limit, url.QueryEscape(next)))
	}
	writeJSON(w, http.StatusOK, recs)
}

func (h *httpAPI) job(w http.ResponseWriter, r *http.Request) {
	if rec, ok := h.visible(w, r); ok {
		writeJSON(w, http.StatusOK, rec)
	}
}

// wait serves GET /v1/jobs/{id}/wait. A waiter from the process that
// called the op (same uid and pid) counts as its caller for on_disconnect,
// so that a caller that waits again after its call's connection broke (a
// daemon restart, client.WaitingCall.Wait) still stops an on_disconnect
// "stop" op when it goes away.
func (h *httpAPI) wait(w http.ResponseWriter, r *http.Request) {
	if rec, ok := h.visible(w, r); ok {
		c, _ := caller(w, r)
		release := func(bool) {}
		if c.UID == rec.CallerUID && c.PID == rec.CallerPID {
			release = h.c.Hold(rec.ID)
		}
		ctx, stop := peerContext(r)
		h.waitAndWrite(ctx, stop, w, rec.ID, release)
	}
}

func (h *httpAPI) cancel(w http.ResponseWriter, r *http.Request) {
	rec, ok := h.visible(w, r)
	if !ok {
		return
	}
	ctx, stop := peerContext(r)
	rec, err := h.c.Cancel(ctx, rec.ID)
	stop()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError writes err as {"error": {"code", "message"}}; an error that
// is not an *api.Error is an internal one.
func writeError(w http.ResponseWriter, err error) {
	e := asError(err)
	writeJSON(w, e.HTTPStatus(), api.ErrorBody{Error: e})
}
