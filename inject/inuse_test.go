package inject

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// TestMain boots the real systemd user manager that InUse's test reads.
func TestMain(m *testing.M) { systemdtest.Main(m) }

// A binary that a loaded service runs is in use, and GC keeps it; one
// that no service runs is removed.
func TestInUseKeepsWhatAServiceRuns(t *testing.T) {
	ctx := context.Background()
	conn := systemdtest.Conn(t)
	dir := filepath.Join(t.TempDir(), "bin")
	src, _ := writeSource(t, "sleeper", "#!/bin/sh\nexec sleep 600\n")
	srcIdle, _ := writeSource(t, "idle", "#!/bin/sh\n")
	used, err := Install(t.Context(), dir, src)
	if err != nil {
		t.Fatal(err)
	}
	unused, err := Install(t.Context(), dir, srcIdle)
	if err != nil {
		t.Fatal(err)
	}
	startService(t, conn, "unitrun-inuse-test.service", "ExecStart="+used+"\n")
	inUse, err := InUse(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !inUse[used] || inUse[unused] {
		t.Fatalf("InUse: %v; want %s in use and not %s", inUse, used, unused)
	}
	removed, err := GC(dir, func(p string) bool { return inUse[p] })
	if err != nil || len(removed) != 1 || removed[0] != unused {
		t.Errorf("GC: removed %v, %v; want only %s", removed, err, unused)
	}
	if _, err := os.Stat(used); err != nil {
		t.Errorf("the binary in use was removed: %v", err)
	}
}

// A binary that a service runs at its stop only (ExecStopPost=, as a pod's
// app runs its exit hook) is in use too.
func TestInUseReadsEveryCommand(t *testing.T) {
	ctx := context.Background()
	conn := systemdtest.Conn(t)
	dir := filepath.Join(t.TempDir(), "bin")
	src, _ := writeSource(t, "atstop", "#!/bin/sh\n")
	atStop, err := Install(t.Context(), dir, src)
	if err != nil {
		t.Fatal(err)
	}
	startService(t, conn, "unitrun-inuse-stop-test.service", "ExecStart=/bin/sleep 600\nExecStopPost="+atStop+"\n")
	inUse, err := InUse(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !inUse[atStop] {
		t.Errorf("InUse does not hold %s, which the service runs at its stop", atStop)
	}
}

// startService writes the service name with the [Service] settings
// service, starts it and stops it when the test ends.
func startService(t *testing.T, conn *manager.Conn, name, service string) {
	t.Helper()
	ctx := context.Background()
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), name), "[Service]\n"+service)
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.StartUnit(ctx, name, "replace"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.StopUnit(ctx, name, "replace") })
}
