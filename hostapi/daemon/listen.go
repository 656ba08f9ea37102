package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/front"
	"golang.org/x/sys/unix"
)

// Listen returns the sockets systemd passed (socket activation), or binds
// socket and seqpacket with mode 0600 when systemd passed none. A passed
// socket named "api" (by FileDescriptorName=) is the HTTP one and one
// named "argv" the SEQPACKET one; a socket with another name counts by its
// type, stream or seqpacket, so that one socket unit with both listeners
// works too. systemd may pass either alone: the other front end is then
// off (its listener nil), as without socket activation.
//
// Without socket activation, when both paths are "" the daemon binds both
// defaults (api.DefaultSocket and api.DefaultSeqpacketSocket, creating
// their directory); when one is given, only the given ones are bound and
// the other front end is off (its listener nil). A given path's directory
// must exist and the path be free or hold a socket (checkSocketPaths,
// before either is bound). A socket file a live process answers on is
// refused (front.ErrInUse); a stale one is replaced. A path that cannot be bound is a *SetupError naming Socket or
// Seqpacket.
func Listen(socket, seqpacket string) (stream, packet net.Listener, err error) {
	named, err := activation.ListenersWithNames()
	if err != nil {
		return nil, nil, fmt.Errorf("socket activation: %w", err)
	}
	if len(named) > 0 {
		return activated(named)
	}
	if socket == "" && seqpacket == "" {
		socket, seqpacket = api.DefaultSocket, api.DefaultSeqpacketSocket
		if err := os.MkdirAll(filepath.Dir(api.DefaultSocket), 0o755); err != nil {
			return nil, nil, &SetupError{Option: "Socket", Path: socket, Err: err}
		}
	}
	if err := checkSocketPaths(socket, seqpacket); err != nil {
		return nil, nil, err
	}
	if stream, err = listen("Socket", "unix", socket); err != nil {
		return nil, nil, err
	}
	if packet, err = listen("Seqpacket", "unixpacket", seqpacket); err != nil {
		if stream != nil {
			stream.Close()
		}
		return nil, nil, err
	}
	return stream, packet, nil
}

// A PathError is the error of a socket path the daemon will not bind:
// its directory is missing or is not a directory (the daemon creates no
// directory of a path it is given), or a file other than a socket is
// there (the daemon replaces only a stale socket).
type PathError struct {
	Path string
	// Dir is the path's directory when that is missing (Missing) or is
	// not a directory; "" when the path itself is not a socket.
	Dir     string
	Missing bool
}

func (e *PathError) Error() string {
	switch {
	case e.Dir == "":
		return e.Path + " exists and is not a socket: the path must be free or hold a socket"
	case e.Missing:
		return "directory " + e.Dir + " does not exist"
	}
	return e.Dir + " is not a directory"
}

// checkSocketPaths returns a *SetupError wrapping a *PathError for the
// first socket path given ("" is none) whose directory is missing or is
// not a directory, or where a file other than a socket is, and one
// wrapping front.ErrInUse for a socket a live process answers on: the
// daemon opens its state dir only after this check.
func checkSocketPaths(socket, seqpacket string) error {
	for _, s := range []struct{ option, network, path string }{{"Socket", "unix", socket}, {"Seqpacket", "unixpacket", seqpacket}} {
		if s.path == "" {
			continue
		}
		dir := filepath.Dir(s.path)
		if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
			return &SetupError{Option: s.option, Path: s.path, Err: &PathError{Path: s.path, Dir: dir, Missing: err != nil}}
		}
		fi, err := os.Lstat(s.path)
		if err == nil && fi.Mode()&fs.ModeSocket == 0 {
			return &SetupError{Option: s.option, Path: s.path, Err: &PathError{Path: s.path}}
		}
		if err == nil {
			if err := front.Answers(s.network, s.path); err != nil {
				return &SetupError{Option: s.option, Path: s.path, Err: err}
			}
		}
	}
	return nil
}

// listen binds the socket of option at path with mode 0600, or returns a
// nil listener when path is "".
func listen(option, network, path string) (net.Listener, error) {
	if path == "" {
		return nil, nil
	}
	// No moment with a socket others may connect to before its chmod.
	defer unix.Umask(unix.Umask(0o077))
	l, err := front.ListenUnix(network, path, 0o600)
	if err != nil {
		return nil, &SetupError{Option: option, Path: path, Err: err}
	}
	return l, nil
}

// activated picks the HTTP and the SEQPACKET socket among those systemd
// passed, by name (see Listen); one that systemd did not pass is nil.
func activated(named map[string][]net.Listener) (stream, packet net.Listener, err error) {
	var apis, argvs []net.Listener
	for name, ls := range named {
		for _, l := range ls {
			switch {
			case name == "api", name != "argv" && l.Addr().Network() == "unix":
				apis = append(apis, l)
			default:
				argvs = append(argvs, l)
			}
		}
	}
	if len(apis) > 1 || len(argvs) > 1 {
		return nil, nil, fmt.Errorf("socket activation: want at most one socket named %q (or a stream socket) and at most one named %q (or a SOCK_SEQPACKET socket), got %d and %d", "api", "argv", len(apis), len(argvs))
	}
	if len(argvs) == 1 {
		if packet = argvs[0]; packet.Addr().Network() != "unixpacket" {
			return nil, nil, fmt.Errorf("socket activation: socket %q is %s, want a SOCK_SEQPACKET unix socket (ListenSequentialPacket=)", "argv", packet.Addr().Network())
		}
	}
	if len(apis) == 1 {
		stream = apis[0]
	}
	return stream, packet, nil
}
