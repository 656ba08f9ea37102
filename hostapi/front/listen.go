package front

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// ErrInUse is the error of ListenUnix for a socket a live process answers
// on.
var ErrInUse = errors.New("in use: a process answers on it")

// probeTimeout bounds ListenUnix's connection to a socket already there.
const probeTimeout = 5 * time.Second

// A UnixListener is a socket ListenUnix bound. Its Close removes the
// socket file only while it is still the one it bound.
type UnixListener struct {
	*net.UnixListener
	path  string
	bound os.FileInfo
}

// ListenUnix binds a unix socket at path, "unix" for the HTTP front end or
// "unixpacket" for the SEQPACKET one, with mode perm (0600 for root-only
// callers). A socket file at path that no process answers on (a stale one,
// left by a process that died) is replaced; one that a process answers on
// is refused with an error wrapping ErrInUse, and any other file there is
// refused too. The directory of path is not created.
func ListenUnix(network, path string, perm fs.FileMode) (*UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("socket %s: exists and is not a socket", path)
		}
		if err := Answers(network, path); err != nil {
			return nil, err
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
	// Go would remove whatever file is at path then, even one another
	// process has bound since.
	l.SetUnlinkOnClose(false)
	bound, err := os.Lstat(path)
	if err == nil {
		err = os.Chmod(path, perm)
	}
	if err != nil {
		l.Close()
		os.Remove(path)
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &UnixListener{UnixListener: l, path: path, bound: bound}, nil
}

// Answers returns nil when no process answers on the socket at path (a
// connection is refused), or an error wrapping ErrInUse when one does,
// whatever the type of its socket.
func Answers(network, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, network, path)
	switch {
	case err == nil:
		c.Close()
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil
	case !errors.Is(err, syscall.EPROTOTYPE) && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("socket %s: %w", path, err)
	}
	return fmt.Errorf("socket %s is %w", path, ErrInUse)
}

// Close closes the listener and removes its socket file if the file at its
// path is still the one it bound: a socket another process has bound there
// since is left alone.
func (l *UnixListener) Close() error {
	err := l.UnixListener.Close()
	if fi, serr := os.Lstat(l.path); serr == nil && os.SameFile(fi, l.bound) {
		os.Remove(l.path)
	}
	return err
}
