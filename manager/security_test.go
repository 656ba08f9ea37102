package manager_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestSecurityEmbeddedManagerSockets connects to the embedded manager's
// private socket and its session bus as root and as uid 65534: root gets
// an answer from the manager, the other user cannot connect to the private
// socket, and the bus refuses it before any call reaches the manager.
func TestSecurityEmbeddedManagerSockets(t *testing.T) {
	dir := systemdtest.Manager(t).Dir
	const connect = `import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    print(type(e).__name__)
`
	nobody := []string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"}
	call := []string{"/usr/bin/busctl", "--address=unix:path=" + filepath.Join(dir, "bus"), "call", "org.freedesktop.systemd1",
		"/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "GetDefaultTarget"}
	for _, tt := range []struct {
		as   []string
		argv []string
		ok   bool
		want string
	}{
		{nil, []string{"/usr/bin/python3", "-c", connect, filepath.Join(dir, "systemd", "private")}, true, "connected\n"},
		{nobody, []string{"/usr/bin/python3", "-c", connect, filepath.Join(dir, "systemd", "private")}, true, "PermissionError\n"},
		{nil, call, true, `s "default.target"` + "\n"},
		{nobody, call, false, ""},
	} {
		argv := append(append([]string(nil), tt.as...), tt.argv...)
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if (err == nil) != tt.ok || string(out) != tt.want {
			t.Errorf("%s: %q, %v; want %q and success %v", strings.Join(argv, " "), out, err, tt.want, tt.ok)
		}
	}
}
