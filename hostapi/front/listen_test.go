package front_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/hostapi/front"
)

// A socket a live process answers on is refused, whatever its type, and
// left as it is; a stale one (its process gone) is replaced.
func TestListenUnixRefusesLiveSocket(t *testing.T) {
	for _, network := range []string{"unix", "unixpacket"} {
		t.Run(network, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.sock")
			first, err := front.ListenUnix(network, path, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer first.Close()
			for _, n := range []string{"unix", "unixpacket"} {
				if l, err := front.ListenUnix(n, path, 0o600); !errors.Is(err, front.ErrInUse) {
					if l != nil {
						l.Close()
					}
					t.Errorf("ListenUnix(%s) on a live %s socket: %v, want it refused as in use", n, network, err)
				}
			}
			if c, err := net.Dial(network, path); err != nil {
				t.Errorf("the first socket no longer answers: %v", err)
			} else {
				c.Close()
			}
		})
	}
	// A socket whose process has gone: bound, then closed without
	// removing its file.
	path := filepath.Join(t.TempDir(), "stale.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	l, err := front.ListenUnix("unix", path, 0o600)
	if err != nil {
		t.Fatalf("ListenUnix on a stale socket: %v, want it replaced", err)
	}
	l.Close()
}

// Close removes the socket file only while it is the one the listener
// bound: one another process bound at the path since stays.
func TestListenUnixCloseLeavesOthersSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.sock")
	l, err := front.ListenUnix("unix", path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	other, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	l.Close()
	if c, err := net.Dial("unix", path); err != nil {
		t.Fatalf("after Close, the socket another listener bound there: %v, want it left answering", err)
	} else {
		c.Close()
	}
	mine, err := front.ListenUnix("unix", filepath.Join(t.TempDir(), "b.sock"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	mine.Close()
	if _, err := os.Lstat(filepath.Join(filepath.Dir(mine.Addr().String()), "b.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close of the listener's own socket left its file: %v", err)
	}
}
