package hostapi

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// shortListener fails its first n accepts with err, as accept4 does when
// the daemon is out of descriptors, and then reports itself closed.
type shortListener struct {
	net.Listener
	n   int
	err error
}

func (l *shortListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, &net.OpError{Op: "accept", Net: "unixpacket", Err: l.err}
	}
	return nil, net.ErrClosed
}

func (l *shortListener) Addr() net.Addr { return &net.UnixAddr{Name: "argv.sock", Net: "unixpacket"} }

// TestAcceptShortOfDescriptors has every accept of the SEQPACKET socket
// fail for want of descriptors (EMFILE, ENFILE): the daemon goes on
// serving, backing off, and logs one line for the burst; only a closed
// listener ends the loop.
func TestAcceptShortOfDescriptors(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	var log bytes.Buffer
	d.Log = slog.New(slog.NewTextHandler(&log, nil))
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		log.Reset()
		d.logLimit = logLimiter{}
		start := time.Now()
		err := d.serveSeqpacket(d.guard(&shortListener{n: 6, err: errno}, refuseSeqpacket))
		if err != nil {
			t.Errorf("%v: serving ended with %v, want it to go on until the listener closes", errno, err)
		}
		lines := strings.Count(log.String(), "\n")
		if max := 1 + int(time.Since(start)/logEvery); lines < 1 || lines > max {
			t.Errorf("%v: %d lines logged in %v, want 1 to %d:\n%s", errno, lines, time.Since(start), max, log.String())
		}
	}
}

// TestLogLimiter lets one line a second through for each reason and
// counts those it holds back for the next.
func TestLogLimiter(t *testing.T) {
	var l logLimiter
	t0 := time.Now()
	steps := []struct {
		reason string
		at     time.Duration
		ok     bool
		held   int
	}{
		{"call no_space", 0, true, 0},
		{"call no_space", 10 * time.Millisecond, false, 0},
		{"call busy", 20 * time.Millisecond, true, 0},
		{"call no_space", 999 * time.Millisecond, false, 0},
		{"call no_space", time.Second, true, 2},
		{"call no_space", 2500 * time.Millisecond, true, 0},
	}
	for _, s := range steps {
		if ok, held := l.allow(s.reason, t0.Add(s.at)); ok != s.ok || held != s.held {
			t.Errorf("%s at %v: allowed %v with %d held, want %v with %d", s.reason, s.at, ok, held, s.ok, s.held)
		}
	}
}

// TestRefusedCallsLogLimited has 2000 calls refused, as a full disk or a
// hostile caller would: the daemon logs at most a line a second for them,
// and the line after a pause says how many it held back.
func TestRefusedCallsLogLimited(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	var log bytes.Buffer
	d.Log = slog.New(slog.NewTextHandler(&log, nil))
	nobody := Caller{UID: 65534, GIDs: []uint32{65534}}
	start := time.Now()
	for range 2000 {
		d.Call(t.Context(), nobody, "echo", nil)
	}
	elapsed := time.Since(start)
	if lines, max := strings.Count(log.String(), "\n"), 1+int(elapsed/logEvery); lines > max {
		t.Fatalf("%d lines logged for 2000 refused calls in %v, want at most %d", lines, elapsed, max)
	}
	time.Sleep(logEvery)
	log.Reset()
	d.Call(t.Context(), nobody, "echo", nil)
	if !strings.Contains(log.String(), "more like it since the last such line, not logged") || !strings.Contains(log.String(), "suppressed=") {
		t.Errorf("line after the burst: %q, want the count of lines held back", log.String())
	}
}
