package front_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestConnectionsPerUID holds uid 0 to max_connections_per_uid = 2 over
// both sockets: with an HTTP connection kept alive and a SEQPACKET one
// open, a third is refused as busy, naming the limit, over HTTP and over
// SEQPACKET; another uid still connects; once one of the two closes, uid 0
// connects again.
func TestConnectionsPerUID(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "\n[limits]\nmax_connections_per_uid = 2\n")
	s := front.NewServer(d, d.Log)
	apiSock, argv := daemontest.Serve(t, d, s)
	kept, err := net.Dial("unix", apiSock)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	if _, err := kept.Write([]byte("GET /healthz HTTP/1.1\r\nHost: unitrun\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(kept), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first connection: %v, %v", resp, err)
	}
	resp.Body.Close()
	waiting, err := net.Dial("unixpacket", argv)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	waitConns(t, s, 2)

	status, body := daemontest.Curl(t, apiSock, nil, "http://unitrun/healthz")
	if status != http.StatusConflict || daemontest.ErrorCode(t, body) != api.CodeBusy || !strings.Contains(body, "max_connections_per_uid") {
		t.Errorf("third connection over HTTP: %d %s, want 409 busy naming max_connections_per_uid", status, body)
	}
	if ok, id, msg := daemontest.SeqpacketRoundTrip(t, argv, []byte("echo\x00x")); ok || id != "" || !strings.HasPrefix(msg, "busy: ") || !strings.Contains(msg, "max_connections_per_uid") {
		t.Errorf("third connection over SEQPACKET: %v %q %q, want an error naming max_connections_per_uid and no job", ok, id, msg)
	}
	other := []string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"}
	if status, body := daemontest.Curl(t, apiSock, other, "http://unitrun/healthz"); status != http.StatusOK {
		t.Errorf("uid 65534 while uid 0 is at its limit: %d %s, want 200", status, body)
	}
	kept.Close()
	waitConns(t, s, 1)
	if status, body := daemontest.Curl(t, apiSock, nil, "http://unitrun/healthz"); status != http.StatusOK {
		t.Errorf("uid 0 after one of its connections closed: %d %s, want 200", status, body)
	}
}

// waitConns waits until uid 0 has n connections counted.
func waitConns(t *testing.T, s *front.Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got := s.Conns(0)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("uid 0 has %d connections counted, want %d", got, n)
		}
	}
}
