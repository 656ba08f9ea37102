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
// works too.
//
// Without socket activation, when both paths are "" the daemon binds both
// defaults (api.DefaultSocket and api.DefaultSeqpacketSocket, creating
// their directory); when one is given, only the given ones are bound and
// the other front end is off (its listener nil). A given path's directory
// must exist (checkSocketDirs, before either is bound). A socket file a
// live process answers on is refused (front.ErrInUse); a stale one is
// replaced. A path that cannot be bound is a *SetupError naming Socket or
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
	if err := checkSocketDirs(socket, seqpacket); err != nil {
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

// A DirError is the error of a socket path whose directory is missing or
// is not a directory: the daemon creates no directory of a path it is
// given.
type DirError struct {
	Dir     string
	Missing bool
}

func (e *DirError) Error() string {
	if e.Missing {
		return "directory " + e.Dir + " does not exist"
	}
	return e.Dir + " is not a directory"
}

// checkSocketDirs returns a *SetupError wrapping a *DirError for the first
// socket path given ("" is none) whose directory is missing or is not a
// directory.
func checkSocketDirs(socket, seqpacket string) error {
	for _, s := range []struct{ option, path string }{{"Socket", socket}, {"Seqpacket", seqpacket}} {
		if s.path == "" {
			continue
		}
		dir := filepath.Dir(s.path)
		if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
			return &SetupError{Option: s.option, Path: s.path, Err: &DirError{Dir: dir, Missing: err != nil}}
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
// passed, by name (see Listen).
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
	if len(apis) != 1 || len(argvs) != 1 {
		return nil, nil, fmt.Errorf("socket activation: want one socket named %q (or a stream socket) and one named %q (or a SOCK_SEQPACKET socket), got %d and %d", "api", "argv", len(apis), len(argvs))
	}
	if argvs[0].Addr().Network() != "unixpacket" {
		return nil, nil, fmt.Errorf("socket activation: socket %q is %s, want a SOCK_SEQPACKET unix socket (ListenSequentialPacket=)", "argv", argvs[0].Addr().Network())
	}
	return apis[0], argvs[0], nil
}
