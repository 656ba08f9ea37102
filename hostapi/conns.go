package hostapi

import (
	"fmt"
	"net"
	"sync"
)

// connCounter counts the open connections of each caller uid on the
// daemon's HTTP and SEQPACKET sockets, to hold every uid to
// Limits.MaxConnectionsPerUID: each connection holds a goroutine and a
// descriptor, and a followed log polls its file for as long as it is open.
type connCounter struct {
	max   int // 0: no bound
	mu    sync.Mutex
	byUID map[uint32]int
	uidOf map[net.Conn]uint32
}

func newConnCounter(max int) *connCounter {
	return &connCounter{max: max, byUID: make(map[uint32]int), uidOf: make(map[net.Conn]uint32)}
}

// take counts conn, of caller uid, or returns an *Error with CodeBusy when
// uid has its limit of connections open already.
func (c *connCounter) take(uid uint32, conn net.Conn) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.byUID[uid]; c.max > 0 && n >= c.max {
		return errorf(CodeBusy, fmt.Sprintf("uid %d has %d connections open to the daemon, the limit max_connections_per_uid", uid, n))
	}
	c.byUID[uid]++
	c.uidOf[conn] = uid
	return nil
}

// release uncounts conn; a connection that take refused was never counted.
func (c *connCounter) release(conn net.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uid, ok := c.uidOf[conn]
	if !ok {
		return
	}
	delete(c.uidOf, conn)
	if c.byUID[uid]--; c.byUID[uid] == 0 {
		delete(c.byUID, uid)
	}
}

// takeConn counts conn, of caller uid, on d's connections, or logs and
// returns the refusal of one over max_connections_per_uid.
func (d *Daemon) takeConn(uid uint32, conn net.Conn) error {
	err := d.conns.take(uid, conn)
	if err != nil {
		d.Log.Warn(fmt.Sprintf("connection of uid %d refused: %v", uid, err), logCallerUID, uid, "reason", CodeBusy)
	}
	return err
}
