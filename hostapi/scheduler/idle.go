package scheduler

import (
	"runtime/debug"
	"time"
)

// idleFree is how long the daemon waits, once no job is queued or running,
// before it returns the memory its last jobs freed to the OS.
const idleFree = time.Second

// idleLocked is called as a job finishes. Once the last live job has
// finished and none has started for idleFree, the daemon returns freed
// memory to the OS (the Go runtime otherwise keeps it for a while), so
// that an idle daemon stays small after a burst of calls.
func (d *Scheduler) idleLocked() {
	if len(d.live) > 0 {
		return
	}
	if d.idle != nil {
		d.idle.Reset(idleFree)
		return
	}
	d.idle = time.AfterFunc(idleFree, func() {
		d.mu.Lock()
		busy := len(d.live) > 0 || d.closed
		d.mu.Unlock()
		if !busy {
			debug.FreeOSMemory()
		}
	})
}
