package front

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// watchHangup returns a context that is canceled once the peer of c has
// gone: it closed the connection (or shut down both of its directions),
// so that no answer written to c can reach it, or c was closed. A peer
// that only shut down its writing side, as a client that sends its
// request and then waits for the answer may, has not gone: a read of c
// then ends, which is why the watch does not read but waits for the
// kernel's POLLHUP, through the runtime's poller (no thread is held).
//
// stop ends the watch and cancels the context; it must be called before
// c is written to, and leaves c without a write deadline.
func watchHangup(c *net.UnixConn) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	raw, err := c.SyscallConn()
	if err != nil {
		cancel()
		return ctx, func() {}
	}
	var stopping atomic.Bool
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		// The poller wakes a writer on every change of the socket's
		// state; the callback says whether the peer is gone.
		raw.Write(func(fd uintptr) bool {
			pfd := []unix.PollFd{{Fd: int32(fd)}}
			n, _ := unix.Poll(pfd, 0)
			return n > 0 && pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
		})
		if !stopping.Load() {
			cancel()
		}
	}()
	return ctx, func() {
		stopping.Store(true)
		c.SetWriteDeadline(time.Unix(1, 0))
		<-exited
		c.SetWriteDeadline(time.Time{})
		cancel()
	}
}
