package systemdtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unitrun/unitrun/manager"
)

// A manager that a killed test binary left running is stopped, and its
// directory and build removed, when the next test binary starts; a live binary's is
// kept.
func TestSweepStopsKilledBinarysManager(t *testing.T) {
	left, err := os.MkdirTemp(runtimeBase(), "unitrun-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(left)
	m := &manager.Embedded{Dir: left}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Stop(context.Background(), 5*time.Second)
	pid := m.PID()
	// The killed binary's lock: the file is there, nobody holds it.
	lock, err := holdLock(left)
	if err != nil {
		t.Fatal(err)
	}
	lock.Close()
	bin, err := os.MkdirTemp("", "unitrun-bin-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(bin)
	if err := os.WriteFile(filepath.Join(left, buildNote), []byte(bin), 0o600); err != nil {
		t.Fatal(err)
	}

	live, err := os.MkdirTemp(runtimeBase(), "unitrun-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	held, err := holdLock(live)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	sweep()
	if Alive(pid) {
		t.Errorf("the left manager (pid %d) still runs after the sweep", pid)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the left manager's directory is still there: %v", err)
	}
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Errorf("the left binary's build is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(live, harnessLock)); err != nil {
		t.Errorf("a live binary's directory was swept: %v", err)
	}
	// This binary's own manager, whose lock this binary holds, still answers.
	if _, err := Conn(t).Version(ctx); err != nil {
		t.Errorf("this binary's manager: %v", err)
	}
}
