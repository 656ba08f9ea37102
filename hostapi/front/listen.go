package front

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
)

// ListenUnix binds a unix socket at path, "unix" for the HTTP front end or
// "unixpacket" for the SEQPACKET one, with mode perm (0600 for root-only
// callers). A stale socket at path is replaced; any other file there is
// refused.
func ListenUnix(network, path string, perm fs.FileMode) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("socket %s: exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("socket %s: %w", path, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	l, err := net.ListenUnix(network, &net.UnixAddr{Name: path, Net: network})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, perm); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return l, nil
}
