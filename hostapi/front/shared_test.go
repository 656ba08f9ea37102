package front_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// releasedCore tells on released each hold a front end released, once
// the release (and the cancel it may make) has returned.
type releasedCore struct {
	core.Core
	released chan bool
}

func (c releasedCore) Hold(id string) func(bool) {
	release := c.Core.Hold(id)
	return func(gone bool) {
		release(gone)
		c.released <- gone
	}
}

// TestHTTPDisconnectJoined: two callers wait over HTTP for one job of an
// exclusive op with on_disconnect "stop", the second having joined the
// first's job. The first going away leaves the job running for the
// second; the second, the last waiting caller, going away cancels it,
// its record saying so.
func TestHTTPDisconnectJoined(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), `
[[op]]
name = "shared"
exec = ["/bin/sh", "-c", "echo started; exec sleep 30"]
exclusive = true
on_disconnect = "stop"
`)
	c := releasedCore{Core: d, released: make(chan bool, 2)}
	apiSock, _ := daemontest.Serve(t, c, front.NewServer(c, d.Log))
	// call calls the op waiting, on a connection of its own, and returns
	// the job's id once the daemon accepted the call (its early id), and
	// the drop of the connection.
	call := func() (id string, drop func()) {
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", apiSock)
		}}}
		ctx, cancel := context.WithCancel(context.Background())
		early := make(chan string, 1)
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			early <- strings.TrimPrefix(h.Get("Location"), "/v1/jobs/")
			return nil
		}})
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://unitrun/v1/ops/shared", strings.NewReader(`{"wait": true}`))
		req.Header.Set("Prefer", api.PreferEarlyID)
		ended := make(chan struct{})
		go func() {
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
			close(ended)
		}()
		select {
		case id = <-early:
		case <-ended:
			t.Fatal("the waiting call ended before its early id")
		}
		return id, func() { cancel(); <-ended }
	}
	first, dropFirst := call()
	second, dropSecond := call()
	if first != second {
		t.Fatalf("the second call started job %s; want it to join %s", second, first)
	}
	// goneReleased returns once the hold of a caller that went away is
	// released.
	goneReleased := func() {
		for !<-c.released {
		}
	}
	dropFirst()
	goneReleased()
	if r, err := d.Get(first); err != nil || r.Done() {
		t.Fatalf("after the first caller went away: %+v, %v; want the job still on for the second", r, err)
	}
	dropSecond()
	goneReleased()
	const why = `canceled because its last waiting caller disconnected (on_disconnect = "stop"): `
	if r, err := d.Get(first); err != nil || r.State != api.StateCanceled || !strings.HasPrefix(r.Message, why) {
		t.Errorf("after the last caller went away: %+v, %v; want it canceled, its message starting %q", r, err, why)
	}
}
