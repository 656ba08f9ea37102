package pod

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// serverPort returns the port of s, an httptest server on 127.0.0.1.
func serverPort(t *testing.T, s *httptest.Server) int {
	t.Helper()
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestProbeChecks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
		case "/slow":
			time.Sleep(2 * time.Second)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	port := serverPort(t, srv)
	ok := StatusRange{Min: 200, Max: 399}
	hang := hangDuration()
	defer wantGone(t, "sleep", hang)
	for _, c := range []struct {
		name  string
		probe Probe
		want  string
	}{
		{"http ok", Probe{HTTP: &HTTPProbe{Port: port, Path: "/ok", Status: ok}}, ProbeSuccess},
		{"http 503", Probe{HTTP: &HTTPProbe{Port: port, Path: "/down", Status: ok}}, ProbeFailure},
		{"http 503 expected", Probe{HTTP: &HTTPProbe{Port: port, Path: "/down", Status: StatusRange{Min: 503, Max: 503}}}, ProbeSuccess},
		{"http slow", Probe{HTTP: &HTTPProbe{Port: port, Path: "/slow", Status: ok}}, ProbeTimeout},
		{"tcp open", Probe{TCP: &TCPProbe{Port: port}}, ProbeSuccess},
		{"tcp closed", Probe{TCP: &TCPProbe{Port: freePort(t)}}, ProbeFailure},
		{"exec 0", Probe{Exec: []string{"/bin/true"}}, ProbeSuccess},
		{"exec 1", Probe{Exec: []string{"/bin/false"}}, ProbeFailure},
		{"exec hangs", Probe{Exec: []string{"/bin/sh", "-c", "sleep " + hang + "; true"}}, ProbeTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &App{Name: "a", Probe: &c.probe}
			got, msg := a.check(context.Background(), 500*time.Millisecond)
			if got != c.want {
				t.Errorf("check: %s (%s), want %s", got, msg, c.want)
			}
		})
	}
}

func TestProbeCredential(t *testing.T) {
	cred, err := (&App{User: "daemon", Group: "root"}).credential()
	if err != nil {
		t.Fatal(err)
	}
	if cred.Uid == 0 || cred.Gid != 0 || len(cred.Groups) != 0 {
		t.Errorf("credential of user daemon, group root: %+v", cred)
	}
	if cred, err := (&App{}).credential(); cred != nil || err != nil {
		t.Errorf("credential of an app with no user: %+v, %v", cred, err)
	}
	if _, err := (&App{User: "no-such-user-here"}).credential(); err == nil {
		t.Error("credential of an unknown user: no error")
	}
}
