package front

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"github.com/unitrun/unitrun/hostapi/core"
	"golang.org/x/sys/unix"
)

// soPeerGroups is SO_PEERGROUPS (Linux 4.13): the supplementary groups of
// a unix socket's peer, as they were when it connected.
const soPeerGroups = 59

// PeerCaller returns the peer of a unix socket connection as the kernel
// recorded it at connect time: uid, gid and pid from SO_PEERCRED and the
// supplementary groups from SO_PEERGROUPS. GIDs holds the primary gid
// first. conn must be a *net.UnixConn.
func PeerCaller(conn net.Conn) (core.Caller, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return core.Caller{}, fmt.Errorf("peer credentials: %T is not a unix socket connection", conn)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return core.Caller{}, fmt.Errorf("peer credentials: %w", err)
	}
	var c core.Caller
	var opErr error
	err = raw.Control(func(fd uintptr) {
		cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			opErr = fmt.Errorf("SO_PEERCRED: %w", err)
			return
		}
		groups, err := peerGroups(int(fd))
		if err != nil {
			opErr = fmt.Errorf("SO_PEERGROUPS: %w", err)
			return
		}
		c = core.Caller{UID: cred.Uid, PID: cred.Pid, GIDs: append([]uint32{cred.Gid}, groups...)}
	})
	if err == nil {
		err = opErr
	}
	if err != nil {
		return core.Caller{}, fmt.Errorf("peer credentials: %w", err)
	}
	return c, nil
}

// peerGroups reads SO_PEERGROUPS, growing its buffer as the kernel asks.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]uint32, 32)
	for {
		n := uint32(len(buf) * 4)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, soPeerGroups,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		switch {
		case e == 0:
			return buf[:n/4], nil
		case errors.Is(e, syscall.ERANGE) && int(n/4) > len(buf):
			buf = make([]uint32, n/4)
		default:
			return nil, e
		}
	}
}
