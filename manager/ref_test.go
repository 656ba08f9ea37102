package manager_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// TestRefSentWithHello: on the manager's socket, the first Ref dials the
// bus beside it and sends its RefUnit behind the bus's Hello, not after
// the bus has answered it, so that the reference costs one round trip on
// the bus. The bus here is the test manager's, behind a relay that holds
// back the bus's answers until the RefUnit has come (or 2 s have passed).
func TestRefSentWithHello(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := systemdtest.Manager(t)
	rt := t.TempDir()
	link := filepath.Join(rt, "systemd", "private")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(m.Socket(), link); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(rt, "bus"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	early := make(chan bool, 1) // whether the RefUnit came before any answer
	go relayHolding(t, l, filepath.Join(m.Dir, "bus"), []byte("RefUnit"), early)

	c, err := manager.Open(ctx, "private:"+link, manager.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ref(ctx, "basic.target"); err != nil {
		t.Fatalf("Ref: %v", err)
	}
	if err := c.Unref(ctx, "basic.target"); err != nil {
		t.Errorf("Unref: %v", err)
	}
	if !<-early {
		t.Error("RefUnit was sent only after the bus answered the Hello: a round trip of its own")
	}
}

// relayHolding accepts one client on l and relays it to the bus at path.
// Once the bus has answered the authentication, it holds back what the
// bus sends until the client has sent want, or for 2 s, and tells early
// which came first.
func relayHolding(t *testing.T, l net.Listener, path string, want []byte, early chan<- bool) {
	client, err := l.Accept()
	if err != nil {
		early <- false
		return
	}
	defer client.Close()
	bus, err := net.Dial("unix", path)
	if err != nil {
		t.Error(err)
		early <- false
		return
	}
	defer bus.Close()
	seen := make(chan struct{})
	var once sync.Once
	go func() {
		var sent []byte
		buf := make([]byte, 4096)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				sent = append(sent, buf[:n]...)
				if _, err := bus.Write(buf[:n]); err != nil {
					return
				}
				if bytes.Contains(sent, want) {
					once.Do(func() { close(seen) })
				}
			}
			if err != nil {
				bus.(*net.UnixConn).CloseWrite()
				return
			}
		}
	}()
	// The authentication's answer ends with the answer to
	// NEGOTIATE_UNIX_FD, the last line a client sends before BEGIN.
	var auth []byte
	buf := make([]byte, 1)
	for !bytes.HasSuffix(auth, []byte("AGREE_UNIX_FD\r\n")) && !(bytes.Contains(auth, []byte("ERROR")) && bytes.HasSuffix(auth, []byte("\r\n"))) {
		if _, err := bus.Read(buf); err != nil {
			early <- false
			return
		}
		auth = append(auth, buf[0])
	}
	if _, err := client.Write(auth); err != nil {
		early <- false
		return
	}
	select {
	case <-seen:
		early <- true
	case <-time.After(2 * time.Second):
		early <- false
	}
	io.Copy(client, bus)
}
