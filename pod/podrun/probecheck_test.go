package podrun

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
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
		{"http ok", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/ok", Status: ok}}, record.ProbeSuccess, ""},
		{"http 503", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/down", Status: ok}}, record.ProbeFailure, ""},
		{"http 503 expected", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/down", Status: pod.StatusRange{Min: 503, Max: 503}}}, record.ProbeSuccess, ""},
		{"http slow", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/slow", Status: ok}}, record.ProbeTimeout, ""},
		// Redirects to the same host are followed, as the kubelet does.
		{"http redirect to ok", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/to-ok", Status: ok}}, record.ProbeSuccess, ""},
		{"http redirect to 503", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/to-down", Status: ok}}, record.ProbeFailure, "status 503 from http://127.0.0.1:"},
		{"http redirect loop", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/loop", Status: ok}}, record.ProbeFailure, "stopped after 10 redirects"},
		// One to another host is not: its 302 counts, with a note that
		// holds its body, as the kubelet's warning does.
		{"http redirect elsewhere", pod.Probe{HTTP: &pod.HTTPProbe{Port: port, Path: "/to-elsewhere", Status: ok}}, record.ProbeSuccess, `redirect to http://unitrun.invalid/down, another host, not followed: Probe terminated redirects, Response body: <a href="http://unitrun.invalid/down">Found</a>.`},
		{"tcp open", pod.Probe{TCP: &pod.TCPProbe{Port: port}}, record.ProbeSuccess, ""},
		{"tcp closed", pod.Probe{TCP: &pod.TCPProbe{Port: freePort(t)}}, record.ProbeFailure, ""},
		{"exec 0", pod.Probe{Exec: []string{"/bin/true"}}, record.ProbeSuccess, ""},
		{"exec 1", pod.Probe{Exec: []string{"/bin/false"}}, record.ProbeFailure, ""},
		// The command's output is the message, as the kubelet's.
		{"exec 1 says why", pod.Probe{Exec: []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 1"}}, record.ProbeFailure, "out\nerr\n"},
		{"exec not found", pod.Probe{Exec: []string{"no-such-command"}}, record.ProbeFailure, "no-such-command"},
		{"exec hangs", pod.Probe{Exec: []string{"/bin/sh", "-c", "sleep " + hang + "; true"}}, record.ProbeTimeout, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &pod.App{Name: "a", Probe: &c.probe}
			got, msg := check(context.Background(), a, a.Probe, 500*time.Millisecond)
			if got != c.want || !strings.Contains(msg, c.note) || c.note == "" && got == record.ProbeSuccess && msg != "" {
				t.Errorf("check: %s (%q), want %s (%q)", got, msg, c.want, c.note)
			}
		})
	}
}

// An exec probe's failure message is its command's output, as the
// kubelet's: exactly what it printed, empty if nothing, its first 10 KiB
// of more.
func TestExecProbeMessage(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{"echo out; echo err >&2; exit 1", "out\nerr\n"},
		{"exit 1", ""},
		{"head -c 20000 /dev/zero | tr '\\0' x; exit 1", strings.Repeat("x", 10<<10)},
	} {
		a := &pod.App{Name: "a", Probe: &pod.Probe{Exec: []string{"/bin/sh", "-c", c.script}}}
		if got, msg := check(context.Background(), a, a.Probe, 10*time.Second); got != record.ProbeFailure || msg != c.want {
			t.Errorf("%s: %s, message of %d bytes %.40q; want failure, %d bytes %.40q", c.script, got, len(msg), msg, len(c.want), c.want)
		}
	}
}

// A startup probe whose run has ended (its app's record has moved on)
// before the probe said anything acts on nothing: it had answered with its
// action, and RunProbe restarted the app, which had exited on its own.
func TestStartupProbeRunEnded(t *testing.T) {
	dir := t.TempDir()
	started := time.Now().Add(-time.Second).Round(0)
	code := 0
	if err := record.WriteApp(dir, "p", record.AppStatus{Name: "a", State: record.AppExited, ExitCode: &code, StartedAt: started}); err != nil {
		t.Fatal(err)
	}
	a := &pod.App{Name: "a", StartupProbe: &pod.Probe{Exec: []string{"/bin/false"}, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 100, Action: record.RestartApp}}
	pr := probing{stateDir: dir, name: "p", a: a, run: started, command: started}
	if acted, err := pr.probeRun(t.Context()); acted != nil || err != nil {
		t.Errorf("startup probe of an ended run: acted %+v, %v; want none", acted, err)
	}
}

// grpcHealthServer serves the gRPC Health Checking Protocol over HTTP/2
// without TLS on 127.0.0.1, as a gRPC server does: Check answers the
// status serving returns for the service asked for (the protobuf field
// 1 of the request), or grpc-status 5 (NOT_FOUND) for -1, as grpc-go's
// health server answers a service it does not know; service "slow"
// answers after 2 s. It returns the server's port.
func grpcHealthServer(t *testing.T, serving func(service string) int) int {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		body, _ := io.ReadAll(r.Body)
		service := ""
		if len(body) > 7 && body[5] == 0x0a {
			service = string(body[7 : 7+int(body[6])])
		}
		if service == "slow" {
			time.Sleep(2 * time.Second)
		}
		status := serving(service)
		w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
		if status < 0 {
			w.Header().Set("Grpc-Status", "5")
			w.Header().Set("Grpc-Message", "unknown service")
			return
		}
		w.Write([]byte{0, 0, 0, 0, 2, 0x08, byte(status)})
		w.Header().Set("Grpc-Status", "0")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return serverPort(t, srv)
}

func TestGRPCProbeChecks(t *testing.T) {
	port := grpcHealthServer(t, func(service string) int {
		switch service {
		case "", "api", "slow":
			return 1 // SERVING
		case "down":
			return 2 // NOT_SERVING
		}
		return -1
	})
	// A server that speaks HTTP/1.1 only is no gRPC server.
	h1 := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer h1.Close()
	for _, c := range []struct {
		name  string
		probe pod.GRPCProbe
		want  string
		msg   string
	}{
		{"server", pod.GRPCProbe{Port: port}, record.ProbeSuccess, ""},
		{"service", pod.GRPCProbe{Port: port, Service: "api"}, record.ProbeSuccess, ""},
		{"not serving", pod.GRPCProbe{Port: port, Service: "down"}, record.ProbeFailure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", pod.GRPCProbe{Port: port, Service: "nope"}, record.ProbeFailure, "health rpc probe failed: code 5: unknown service"},
		{"slow", pod.GRPCProbe{Port: port, Service: "slow"}, record.ProbeTimeout, "no answer within 500ms"},
		{"closed port", pod.GRPCProbe{Port: freePort(t)}, record.ProbeFailure, "failed to connect service"},
		{"http/1.1 server", pod.GRPCProbe{Port: serverPort(t, h1)}, record.ProbeFailure, "failed to connect service"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &pod.App{Name: "a", Probe: &pod.Probe{GRPC: &c.probe}}
			got, msg := check(context.Background(), a, a.Probe, 500*time.Millisecond)
			if got != c.want || !strings.Contains(msg, c.msg) || c.msg == "" && msg != "" {
				t.Errorf("check: %s (%q), want %s (%q)", got, msg, c.want, c.msg)
			}
		})
	}
}

func TestGRPCUnimplemented(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Status", "12")
		w.Header().Set("Grpc-Message", "unknown%20service grpc.health.v1.Health")
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()
	a := &pod.App{Name: "a", Probe: &pod.Probe{GRPC: &pod.GRPCProbe{Port: serverPort(t, srv)}}}
	got, msg := check(context.Background(), a, a.Probe, time.Second)
	if want := "this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"; got != record.ProbeFailure || msg != want {
		t.Errorf("check: %s (%q), want failure (%q)", got, msg, want)
	}
}
