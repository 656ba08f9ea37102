package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefusesForeignOwner plants a state directory that another uid
// (65534) could write, directly or by renaming a parent: the state dir
// owned by it, a parent owned by it, a parent writable by its group, and
// a records.log owned by it in a state dir of root's. Open refuses each,
// naming the path at fault, before reading a record; a state dir of
// root's under /tmp-like sticky parents is taken.
func TestOpenRefusesForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another uid needs root")
	}
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, parent, state string) (named string)
	}{
		{"state dir owned by another uid", func(t *testing.T, _, state string) string {
			chown(t, state)
			return state + ": a directory owned by uid 65534"
		}},
		{"parent owned by another uid", func(t *testing.T, parent, state string) string {
			chown(t, parent)
			return state + ": reached through " + parent + ", a directory owned by uid 65534"
		}},
		{"parent writable by its group", func(t *testing.T, parent, state string) string {
			if err := os.Chmod(parent, 0o775); err != nil {
				t.Fatal(err)
			}
			return state + ": reached through " + parent + ", a directory writable by group or others"
		}},
		{"records.log owned by another uid", func(t *testing.T, _, state string) string {
			log := filepath.Join(state, logFile)
			chown(t, log)
			return log + ": owned by uid 65534"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "parent")
			state := filepath.Join(parent, "state")
			s, err := Open(state)
			if err != nil {
				t.Fatalf("before the plant: %v", err)
			}
			s.Close()
			want := tt.plant(t, parent, state)
			s, err = Open(state)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Open: %v; want an error naming %q", err, want)
			}
		})
	}
	if fi, err := os.Stat(os.TempDir()); err != nil || fi.Mode()&os.ModeSticky == 0 {
		t.Logf("%s is not sticky (%v, %v): its case is not tried", os.TempDir(), fi.Mode(), err)
		return
	}
	s, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Errorf("a state dir of root's under sticky %s: %v", os.TempDir(), err)
	} else {
		s.Close()
	}
}

// chown gives path to uid 65534.
func chown(t *testing.T, path string) {
	t.Helper()
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}
