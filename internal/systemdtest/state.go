package systemdtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/unitrun/unitrun/manager"
)

// WaitActiveState waits until the unit's ActiveState on conn is state
// (such as "active" or "inactive"), failing the test after 30 s.
func WaitActiveState(t testing.TB, conn *manager.Conn, name, state string) {
	t.Helper()
	waitUnitProperty(t, conn, name, "ActiveState", state)
}

// WaitSubState waits, up to 30 s, for the unit's SubState to be state.
func WaitSubState(t testing.TB, conn *manager.Conn, name, state string) {
	t.Helper()
	waitUnitProperty(t, conn, name, "SubState", state)
}

// waitUnitProperty waits, up to 30 s, for the unit's property prop (of
// the Unit interface) to be state.
func waitUnitProperty(t testing.TB, conn *manager.Conn, name, prop, state string) {
	t.Helper()
	var last any
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		props, err := conn.Properties(context.Background(), name, manager.UnitIface)
		if err != nil {
			t.Fatal(err)
		}
		if last = props[prop].Value(); last == state {
			return
		}
	}
	t.Fatalf("%s: %s %v after 30 s, want %s", name, prop, last, state)
}

// Unloaded reports whether the manager on conn has unloaded the unit, or
// does so within 10 s.
func Unloaded(t testing.TB, conn *manager.Conn, name string) bool {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		props, err := conn.Properties(context.Background(), name, manager.UnitIface)
		if err != nil {
			t.Fatal(err)
		}
		if props["LoadState"].Value() == "not-found" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// OwnEmbedded returns an embedded manager of the test's own, not booted,
// in a new directory: the test's cleanup stops it and removes the
// directory.
func OwnEmbedded(t testing.TB) *manager.Embedded {
	t.Helper()
	dir, err := os.MkdirTemp("", "unitrun-emb-")
	if err != nil {
		t.Fatal(err)
	}
	e := &manager.Embedded{Dir: dir}
	t.Cleanup(func() {
		e.Stop(context.Background(), 10*time.Second)
		os.RemoveAll(dir)
	})
	return e
}
