package front_test

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/internal/loglimit"
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
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		log.Reset()
		s := front.NewServer(d, slog.New(slog.NewTextHandler(&log, nil)))
		start := time.Now()
		err := s.ServeSeqpacket(&shortListener{n: 6, err: errno})
		if err != nil {
			t.Errorf("%v: serving ended with %v, want it to go on until the listener closes", errno, err)
		}
		lines := strings.Count(log.String(), "\n")
		if max := 1 + int(time.Since(start)/loglimit.Every); lines < 1 || lines > max {
			t.Errorf("%v: %d lines logged in %v, want 1 to %d:\n%s", errno, lines, time.Since(start), max, log.String())
		}
	}
}
