package front

import (
	"fmt"
	"math"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/api"
)

// connCounter counts the open connections of each caller uid on the
// daemon's HTTP and SEQPACKET sockets, to hold every uid to
// Limits.MaxConnectionsPerUID, and all of them to the descriptors the
// daemon can spare for connections: each connection holds a goroutine and
// a descriptor, and a followed log polls its file for as long as it is
// open.
type connCounter struct {
	max    int // per uid; 0: no bound
	budget int // connections of all uids together (connBudget)
	mu     sync.Mutex
	total  int
	byUID  map[uint32]int
}

func newConnCounter(max, budget int) *connCounter {
	return &connCounter{max: max, budget: budget, byUID: make(map[uint32]int)}
}

// connBudget returns how many connections the daemon may hold open at
// once: its descriptor limit (RLIMIT_NOFILE) less a reserve of a quarter
// of it, at least 64, which the daemon keeps for itself (job records and
// output logs, followed logs, the manager and the journal).
func connBudget() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > math.MaxInt32 {
		return math.MaxInt32
	}
	n := int(rl.Cur)
	return max(0, n-max(64, n/4))
}

// take counts a connection of caller uid, or returns an *api.Error with
// CodeBusy when uid has its limit of connections open already, or when
// uid would hold half or more of the connections that the other uids
// leave free of the budget: one uid, however many connections it opens,
// leaves room for the others.
func (c *connCounter) take(uid uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.byUID[uid]
	switch {
	case c.max > 0 && n >= c.max:
		return errorf(api.CodeBusy, fmt.Sprintf("uid %d has %d connections open to the daemon, the limit max_connections_per_uid", uid, n))
	case 2*n >= c.budget-(c.total-n):
		return errorf(api.CodeBusy, fmt.Sprintf("uid %d has %d connections open to the daemon, its share of the %d the daemon's file descriptor limit allows", uid, n, c.budget))
	}
	c.byUID[uid]++
	c.total++
	return nil
}

// release uncounts a connection of uid that take counted.
func (c *connCounter) release(uid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.byUID[uid]--; c.byUID[uid] == 0 {
		delete(c.byUID, uid)
	}
}
