package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/manager"
)

// managerGrace is how long a call waits for a broken connection to the
// manager to come back (a daemon-reexec takes far less) before it is
// refused with CodeManagerUnavailable.
const managerGrace = 3 * time.Second

// mgrState follows the daemon's connection to its manager from the
// connection events that every Watch receives, so that a call can be
// refused at once while the manager is gone instead of creating a job
// that cannot start.
type mgrState struct {
	once sync.Once
	mu   sync.Mutex
	down bool
	back chan struct{} // closed when the connection is back
}

// followManager starts following the connection, once.
func (d *Scheduler) followManager() {
	d.mgrState.once.Do(func() {
		// No unit has this name: the watch gets connection events only.
		w := d.mgr.WatchProps("unitrun-hostapi-connection.watch") // only the connection's events
		go func() {
			defer w.Close()
			s := &d.mgrState
			for {
				ev, err := w.Next(context.Background())
				if err != nil || ev.Kind == manager.EventClosed {
					return
				}
				s.mu.Lock()
				switch {
				case ev.Kind == manager.EventDisconnected && !s.down:
					s.down, s.back = true, make(chan struct{})
					d.Logf("hostapi: the connection to the manager %s broke: calls wait up to %v for it, then are refused with %s", d.mgr.Target().Spec, managerGrace, api.CodeManagerUnavailable)
				case ev.Kind == manager.EventReconnected && s.down:
					s.down = false
					close(s.back)
					d.Logf("hostapi: the connection to the manager %s is back", d.mgr.Target().Spec)
				}
				s.mu.Unlock()
			}
		}()
	})
}

// managerReachable returns nil while the connection to the manager is up;
// while it is broken it waits up to managerGrace for it to come back, then
// returns an *Error with CodeManagerUnavailable.
func (d *Scheduler) managerReachable(ctx context.Context) error {
	d.followManager()
	s := &d.mgrState
	s.mu.Lock()
	down, back := s.down, s.back
	s.mu.Unlock()
	if !down {
		return nil
	}
	select {
	case <-back:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(managerGrace):
		return errorf(api.CodeManagerUnavailable, fmt.Sprintf("the systemd manager (%s) is not reachable: its connection broke over %v ago and is being redialled; nothing was started", d.mgr.Target().Spec, managerGrace))
	}
}
