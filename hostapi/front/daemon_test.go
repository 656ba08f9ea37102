package front_test

import (
	"os"
	"testing"

	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/hostapi/scheduler"
	"github.com/unitrun/unitrun/manager"
)

// root is the test, calling as root.
var root = core.Caller{UID: 0, PID: int32(os.Getpid())}

// newTestDaemon returns a daemon with the test ops (and extra) on mgr, its
// state in a temp dir, and that dir (see daemontest.Open).
func newTestDaemon(t *testing.T, mgr *manager.Conn, extra string) (*scheduler.Scheduler, string) {
	t.Helper()
	return daemontest.Open(t, mgr, extra, scheduler.OpenStore, scheduler.New)
}

// serveTest serves d's HTTP and SEQPACKET front ends (see daemontest.Serve).
func serveTest(t *testing.T, d *scheduler.Scheduler) (apiSock, argv string) {
	t.Helper()
	return daemontest.Serve(t, d, front.NewServer(d, d.Log))
}
