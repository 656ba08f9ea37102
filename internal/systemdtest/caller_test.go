package systemdtest

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// A Caller sees the socket and nothing else of /run, has no network and
// runs as the uid it was given.
func TestCaller(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	sock := filepath.Join(dir, "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	os.Chmod(sock, 0o666)
	hostOnly, err := os.MkdirTemp("/run", "unitrun-caller-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(hostOnly)
	out, err := Caller(sock, 65534, 65534, "/bin/sh", "-c", `id -u; ls /run/unitrun; test -e "$1" || echo no-host-run; grep -c ':' /proc/net/dev; test -S "$UNITRUN_SOCKET" && echo socket`, "sh", hostOnly).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "65534\napi.sock\nno-host-run\n1\nsocket\n"
	if string(out) != want {
		t.Errorf("caller saw:\n%s\nwant:\n%s", out, want)
	}
}
