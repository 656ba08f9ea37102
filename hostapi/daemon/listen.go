package daemon

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/front"
	"golang.org/x/sys/unix"
)

// Listen returns the sockets systemd passed (socket activation), or binds
// socket and seqpacket (api.DefaultSocket and api.DefaultSeqpacketSocket
// when "") with mode 0600 when systemd passed none. A passed socket named "api" (by
// FileDescriptorName=) is the HTTP one and one named "argv" the SEQPACKET
// one; a socket with another name counts by its type, stream or
// seqpacket, so that one socket unit with both listeners works too. A
// path that cannot be bound is a *SetupError naming Socket or Seqpacket.
func Listen(socket, seqpacket string) (stream net.Listener, packet *net.UnixListener, err error) {
	named, err := activation.ListenersWithNames()
	if err != nil {
		return nil, nil, fmt.Errorf("socket activation: %w", err)
	}
	if len(named) > 0 {
		return activated(named)
	}
	// No moment with a socket others may connect to before its chmod.
	defer unix.Umask(unix.Umask(0o077))
	if socket == "" {
		socket = api.DefaultSocket
	}
	if seqpacket == "" {
		seqpacket = api.DefaultSeqpacketSocket
	}
	for _, s := range []struct{ option, path string }{{"Socket", socket}, {"Seqpacket", seqpacket}} {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
			return nil, nil, &SetupError{Option: s.option, Path: s.path, Err: err}
		}
	}
	hl, err := front.ListenUnix("unix", socket, 0o600)
	if err != nil {
		return nil, nil, &SetupError{Option: "Socket", Path: socket, Err: err}
	}
	pl, err := front.ListenUnix("unixpacket", seqpacket, 0o600)
	if err != nil {
		hl.Close()
		return nil, nil, &SetupError{Option: "Seqpacket", Path: seqpacket, Err: err}
	}
	return hl, pl, nil
}

// activated picks the HTTP and the SEQPACKET socket among those systemd
// passed, by name (see Listen).
func activated(named map[string][]net.Listener) (stream net.Listener, packet *net.UnixListener, err error) {
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
	ul, ok := argvs[0].(*net.UnixListener)
	if !ok || ul.Addr().Network() != "unixpacket" {
		return nil, nil, fmt.Errorf("socket activation: socket %q is %s, want a SOCK_SEQPACKET unix socket (ListenSequentialPacket=)", "argv", argvs[0].Addr().Network())
	}
	return apis[0], ul, nil
}
