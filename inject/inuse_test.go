package inject

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
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
	name := "unitrun-inuse-test.service"
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), name), "[Service]\nExecStart="+used+"\n")
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.StartUnit(ctx, name, "replace"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.StopUnit(ctx, name, "replace") })
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
