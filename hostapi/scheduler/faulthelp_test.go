package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// faultCtx is a test's overall bound, so that a hang fails the test
// instead of the binary's timeout.
func faultCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// rawHTTP returns an HTTP client of the unix socket that keeps no idle
// connection, so that the daemon's open connections are only those a test
// holds.
func rawHTTP(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
}

// seqCall sends one request packet on the SEQPACKET socket and returns the
// parsed response.
func seqCall(ctx context.Context, sock string, pkt []byte) (ok bool, id, msg string, err error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "unixpacket", sock)
	if err != nil {
		return false, "", "", err
	}
	defer c.Close()
	if dl, has := ctx.Deadline(); has {
		c.SetDeadline(dl)
	}
	if _, err := c.Write(pkt); err != nil {
		return false, "", "", err
	}
	buf := make([]byte, 1<<16)
	n, err := c.Read(buf)
	if err != nil {
		return false, "", "", err
	}
	return api.ParseResponse(buf[:n])
}

// seqRequest is api.EncodeRequest for arguments known to be valid.
func seqRequest(t testing.TB, op string, args ...string) []byte {
	t.Helper()
	pkt, err := api.EncodeRequest(op, args)
	if err != nil {
		t.Fatal(err)
	}
	return pkt
}

// procStats is what /proc says of a process: its threads, open fds and
// resident memory.
type procStats struct {
	Threads, FDs int
	RSSKiB       int
}

func (s procStats) String() string {
	return fmt.Sprintf("threads %d, fds %d, rss %d KiB", s.Threads, s.FDs, s.RSSKiB)
}

// readProcStats reads /proc/<pid>/status and /proc/<pid>/fd.
func readProcStats(t testing.TB, pid int) procStats {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var s procStats
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			fmt.Sscan(v, &s.Threads)
		}
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscan(v, &s.RSSKiB)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	s.FDs = len(fds)
	return s
}

// settleFDs waits, until ctx ends, for the daemon's fd count to come back
// to at most want (connections are closed asynchronously), and returns the
// last stats read.
func settleFDs(ctx context.Context, t testing.TB, d *systemdtest.Daemon, want int) procStats {
	t.Helper()
	for {
		s := readProcStats(t, d.Cmd.Process.Pid)
		if s.FDs <= want || ctx.Err() != nil {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// healthy fails the test unless the daemon answers /healthz and a
// SEQPACKET call of op with args succeeds.
func healthy(ctx context.Context, t testing.TB, d *systemdtest.Daemon, op string, args ...string) {
	t.Helper()
	resp, err := rawHTTP(d.API).Get("http://unitrun/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %s", resp.Status)
	}
	if ok, _, msg, err := seqCall(ctx, d.Argv, seqRequest(t, op, args...)); err != nil || !ok {
		t.Fatalf("seqpacket %s: %v %q, %v", op, ok, msg, err)
	}
}

// slowHeaders sends a request to the HTTP socket a byte every pause, its
// headers long enough to outlast read_header_timeout, calling each (if
// set) every 10 bytes, and returns an error unless the daemon cut it off:
// closed the connection before the last byte, having answered 400 or
// nothing. Which of the two depends on where the deadline falls: net/http
// answers 400 to a partial line it cannot parse (the request line, or a
// header with no colon yet) and closes without a word on one that parses.
func slowHeaders(ctx context.Context, apiSock string, pause time.Duration, each func()) error {
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", apiSock)
	if err != nil {
		return err
	}
	defer conn.Close()
	header := "GET /healthz HTTP/1.1\r\nHost: unitrun\r\nX-Slow: " + strings.Repeat("s", 200) + "\r\n\r\n"
	sent := 0
	for ; sent < len(header); sent++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := conn.Write([]byte{header[sent]}); err != nil {
			break // closed by the daemon
		}
		if each != nil && sent%10 == 0 {
			each()
		}
		time.Sleep(pause)
	}
	if sent == len(header) {
		return fmt.Errorf("all %d bytes were taken: want the connection closed before", sent)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	// Bytes written that the daemon never read make its close a reset,
	// after any answer.
	got, err := io.ReadAll(conn)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) || len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.1 400 ") {
		return fmt.Errorf("cut off after %d bytes with %q, %v: want a 400 or no answer, then the close", sent, got, err)
	}
	return nil
}
