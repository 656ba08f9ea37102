package podrun

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
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
		case "/to-ok":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/to-down":
			http.Redirect(w, r, "/down", http.StatusFound)
		case "/to-elsewhere":
			http.Redirect(w, r, "http://unitrun.invalid/down", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	port := serverPort(t, srv)
	ok := pod.StatusRange{Min: 200, Max: 399}
	hang := hangDuration()
	defer wantGone(t, "sleep", hang)
	for _, c := range []struct {
		name  string
		probe pod.Probe
		want  string
		note  string
	}{
		{"http ok", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/ok", Status: ok}}, pod.ProbeSuccess, ""},
		{"http 503", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/down", Status: ok}}, pod.ProbeFailure, ""},
		{"http 503 expected", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/down", Status: pod.StatusRange{Min: 503, Max: 503}}}, pod.ProbeSuccess, ""},
		{"http slow", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/slow", Status: ok}}, pod.ProbeTimeout, ""},
		// Redirects to the same host are followed, as the kubelet does.
		{"http redirect to ok", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/to-ok", Status: ok}}, pod.ProbeSuccess, ""},
		{"http redirect to 503", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/to-down", Status: ok}}, pod.ProbeFailure, "status 503 from http://127.0.0.1:"},
		{"http redirect loop", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/loop", Status: ok}}, pod.ProbeFailure, "stopped after 10 redirects"},
		// One to another host is not: its 302 counts, with a note that
		// holds its body, as the kubelet's warning does.
		{"http redirect elsewhere", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/to-elsewhere", Status: ok}}, pod.ProbeSuccess, `redirect to http://unitrun.invalid/down, another host, not followed: Probe terminated redirects, Response body: <a href="http://unitrun.invalid/down">Found</a>.`},
		{"tcp open", pod.Probe{TCP: &pod.TCPProbe{Port: port}}, pod.ProbeSuccess, ""},
		{"tcp closed", pod.Probe{TCP: &pod.TCPProbe{Port: freePort(t)}}, pod.ProbeFailure, ""},
		{"exec 0", pod.Probe{Exec: []string{"/bin/true"}}, pod.ProbeSuccess, ""},
		{"exec 1", pod.Probe{Exec: []string{"/bin/false"}}, pod.ProbeFailure, ""},
		{"exec hangs", pod.Probe{Exec: []string{"/bin/sh", "-c", "sleep " + hang + "; true"}}, pod.ProbeTimeout, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &pod.App{Name: "a", Probe: &c.probe}
			got, msg := check(context.Background(), a, a.Probe, 500*time.Millisecond)
			if got != c.want || !strings.Contains(msg, c.note) || c.note == "" && got == pod.ProbeSuccess && msg != "" {
				t.Errorf("check: %s (%q), want %s (%q)", got, msg, c.want, c.note)
			}
		})
	}
}

func TestProbeCredential(t *testing.T) {
	cred, err := credential(&pod.App{User: "daemon", Group: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if cred.Uid == 0 || cred.Gid != 0 || len(cred.Groups) != 0 {
		t.Errorf("credential of user daemon, group root: %+v", cred)
	}
	if cred, err := credential(&pod.App{}); cred != nil || err != nil {
		t.Errorf("credential of an app with no user: %+v, %v", cred, err)
	}
	if _, err := credential(&pod.App{User: "no-such-user-here"}); err == nil {
		t.Error("credential of an unknown user: no error")
	}
}

// A startup probe whose run has ended (its app's record has moved on)
// before the probe said anything acts on nothing: it had answered with its
// action, and RunProbe restarted the app, which had exited on its own.
func TestStartupProbeRunEnded(t *testing.T) {
	dir := t.TempDir()
	started := time.Now().Add(-time.Second).Round(0)
	code := 0
	if err := pod.WriteApp(dir, "p", pod.AppStatus{Name: "a", State: pod.AppExited, ExitCode: &code, StartedAt: started}); err != nil {
		t.Fatal(err)
	}
	a := &pod.App{Name: "a", StartupProbe: &pod.Probe{Exec: []string{"/bin/false"}, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 100, Action: pod.RestartApp}}
	pr := probing{stateDir: dir, name: "p", a: a, run: started, command: started}
	if action, err := pr.probeRun(t.Context()); action != "" || err != nil {
		t.Errorf("startup probe of an ended run: action %q, %v; want none", action, err)
	}
}
