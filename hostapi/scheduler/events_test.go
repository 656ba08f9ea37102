package scheduler

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/internal/loglimit"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestRefusedCallsLogLimited has 2000 calls refused, as a full disk or a
// hostile caller would: the daemon logs at most a line a second for them,
// and the line after a pause says how many it held back.
func TestRefusedCallsLogLimited(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	var log bytes.Buffer
	d.Log = slog.New(slog.NewTextHandler(&log, nil))
	nobody := core.Caller{UID: 65534, GIDs: []uint32{65534}}
	start := time.Now()
	for range 2000 {
		d.Call(t.Context(), nobody, "echo", nil)
	}
	elapsed := time.Since(start)
	if lines, max := strings.Count(log.String(), "\n"), 1+int(elapsed/loglimit.Every); lines > max {
		t.Fatalf("%d lines logged for 2000 refused calls in %v, want at most %d", lines, elapsed, max)
	}
	time.Sleep(loglimit.Every)
	log.Reset()
	d.Call(t.Context(), nobody, "echo", nil)
	if !strings.Contains(log.String(), "more like it since the last such line, not logged") || !strings.Contains(log.String(), "suppressed=") {
		t.Errorf("line after the burst: %q, want the count of lines held back", log.String())
	}
}
