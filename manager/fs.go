package manager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// SharesFS reports whether the manager sees the caller's file system: its
// root directory is the caller's, so that a path the caller checks is the
// one the manager will use. That holds for a user manager of the caller's
// host and for the embedded manager; not for a manager that the caller
// reaches from another root (a container with the manager's socket
// mounted into it), nor for one whose process the caller cannot see.
func (c *Conn) SharesFS(ctx context.Context) bool {
	pid, err := c.managerPID(ctx)
	if err != nil || pid <= 0 {
		return false
	}
	return sameFile(fmt.Sprintf("/proc/%d/root/", pid), "/")
}

// sameFile reports whether the paths a and b name one file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// SharesProcs reports whether the manager sees the caller's processes as
// the caller does: it shares the caller's file system (SharesFS) and PID
// namespace, so that a path /proc/PID/fd/N of the caller's opens, for the
// manager, the caller's descriptor N.
func (c *Conn) SharesProcs(ctx context.Context) bool {
	if !c.SharesFS(ctx) {
		return false
	}
	pid, err := c.managerPID(ctx)
	if err != nil {
		return false
	}
	return sameFile(fmt.Sprintf("/proc/%d/ns/pid", pid), "/proc/self/ns/pid")
}

// Sees reports whether the manager sees path, which exists, as the
// caller does: the same file is at path under the manager's root
// (/proc/PID/root). A mount made in the caller's mount namespace after the
// manager started is not seen by a manager with a mount namespace of its
// own, such as the embedded manager. It reports true when it cannot tell
// (the manager's process is not visible to the caller).
func (c *Conn) Sees(ctx context.Context, path string) bool {
	pid, err := c.managerPID(ctx)
	if err != nil || pid <= 0 {
		return true
	}
	ours, err := os.Stat(path)
	if err != nil {
		return true
	}
	theirs, err := os.Stat(fmt.Sprintf("/proc/%d/root%s", pid, path))
	if errors.Is(err, fs.ErrPermission) {
		return true
	}
	return err == nil && os.SameFile(ours, theirs)
}

// PID returns the process id of the manager, as the caller sees it.
func (c *Conn) PID(ctx context.Context) (int, error) { return c.managerPID(ctx) }

// managerPID returns the process id of the manager: the peer of a private
// socket, or the bus's word for the owner of the manager's name.
func (c *Conn) managerPID(ctx context.Context) (int, error) {
	bus, stream, _, err := c.usable(ctx)
	if err != nil {
		return 0, err
	}
	if stream != nil {
		raw, err := stream.SyscallConn()
		if err != nil {
			return 0, err
		}
		var cred *unix.Ucred
		var credErr error
		if err := raw.Control(func(fd uintptr) {
			cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		}); err != nil {
			return 0, err
		}
		if credErr != nil {
			return 0, credErr
		}
		return int(cred.Pid), nil
	}
	var pid uint32
	err = bus.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, busName).Store(&pid)
	return int(pid), err
}
