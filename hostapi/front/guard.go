package front

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
)

// refuseGrace bounds how long a refused connection is kept open for the
// request its caller is sending, so that the refusal it gets is not lost
// (a unix socket closed with a packet unread is reset), and maxRefusing
// how many refused connections wait so at once; beyond them, a refused
// connection is answered and closed without waiting.
const (
	refuseGrace = 100 * time.Millisecond
	maxRefusing = 64
)

// acceptBackoffMax bounds the pause after an accept that failed for want
// of descriptors or memory.
const acceptBackoffMax = time.Second

// A guardedListener accepts the connections of one of the daemon's
// sockets. It reads each peer's credentials and counts the connection
// against its uid (connCounter); a connection over the limits is refused
// (answered by refuse) and closed at once, never served. An accept that
// fails for want of descriptors or memory is a reason to shed load, not
// to stop serving: the listener backs off, up to a second, logging at most
// a line a second, and accepts again.
type guardedListener struct {
	net.Listener
	conns *connCounter
	// warn logs at level warn, at most a line a second for each reason.
	warn func(reason, msg string, attrs ...any)
	// refuse answers a refused connection with err, after reading what
	// the caller sent within refuseGrace when wait is set.
	refuse   func(c *net.UnixConn, err error, wait bool)
	refusing chan struct{} // a token for each refused connection waiting
}

// guard returns l guarded by the limits of s, refusing with refuse.
func (s *Server) guard(l net.Listener, refuse func(c *net.UnixConn, err error, wait bool)) *guardedListener {
	warn := func(reason, msg string, attrs ...any) { s.logLimit.Warn(s.log, reason, msg, attrs...) }
	return &guardedListener{Listener: l, conns: s.conns, warn: warn, refuse: refuse, refusing: make(chan struct{}, maxRefusing)}
}

// A guardConn is a connection the guard let in: its caller is counted
// until it is closed.
type guardConn struct {
	*net.UnixConn
	caller core.Caller
	conns  *connCounter
	once   sync.Once
}

func (c *guardConn) Close() error {
	c.once.Do(func() { c.conns.release(c.caller.UID) })
	return c.UnixConn.Close()
}

// Accept returns the next connection within the limits, a *guardConn. It
// returns an error only when the listener does, for another reason than a
// shortage of descriptors or memory (net.ErrClosed once it is closed).
func (g *guardedListener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			if !resourceShortage(err) {
				return nil, err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), acceptBackoffMax)
			g.warn("accept "+g.Addr().Network(), fmt.Sprintf("accepting a connection on %s: %v: shedding load, accepting again in %v", g.Addr(), err, backoff),
				"reason", "accept")
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		uc, ok := c.(*net.UnixConn)
		if !ok {
			c.Close()
			continue
		}
		caller, err := PeerCaller(uc)
		if err != nil {
			err = errorf(api.CodeUnauthorized, err.Error())
		} else {
			err = g.takeConn(caller.UID)
		}
		if err != nil {
			g.refuseConn(uc, err)
			continue
		}
		return &guardConn{UnixConn: uc, caller: caller, conns: g.conns}, nil
	}
}

// refuseConn answers c with err and closes it, giving the caller up to
// refuseGrace to send its request first unless maxRefusing connections
// wait so already.
func (g *guardedListener) refuseConn(c *net.UnixConn, err error) {
	select {
	case g.refusing <- struct{}{}:
		go func() {
			defer func() { <-g.refusing }()
			g.refuse(c, err, true)
		}()
	default:
		g.refuse(c, err, false)
	}
}

// resourceShortage reports whether an accept failed for want of
// descriptors or kernel memory, which closing connections frees.
func resourceShortage(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// takeConn counts a connection of caller uid, or logs (at most a line a
// second) and returns its refusal.
func (g *guardedListener) takeConn(uid uint32) error {
	err := g.conns.take(uid)
	if err != nil {
		// caller_uid is the attribute the scheduler's events name the uid by.
		g.warn("connection "+api.CodeBusy, fmt.Sprintf("connection of uid %d refused: %v", uid, err), "caller_uid", uid, "reason", api.CodeBusy)
	}
	return err
}
