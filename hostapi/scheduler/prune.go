package scheduler

import (
	"context"
	"time"
)

// pruneEvery is how often PruneHourly prunes old records, however few jobs end.
const pruneEvery = time.Hour

// Prune removes old finished records by the config's limits.
func (d *Scheduler) Prune() error {
	_, err := d.store.Prune(d.cfg.Limits.RecordsKeep, d.cfg.Limits.RecordsMaxAge, time.Now())
	return err
}

// pruneLocked is called as a job's final record is stored. Once a
// tenth of records_keep jobs (at least one) have finished since the last
// prune, it starts one, so that the records stay near the limit under
// sustained load rather than only at the daemon's start and hourly.
func (d *Scheduler) pruneLocked() {
	d.sincePrune++
	if d.sincePrune >= max(d.cfg.Limits.RecordsKeep/10, 1) {
		d.startPruneLocked()
	}
}

// PruneHourly starts a prune every pruneEvery until ctx ends.
func (d *Scheduler) PruneHourly(ctx context.Context) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			d.mu.Lock()
			d.startPruneLocked()
			d.mu.Unlock()
		case <-ctx.Done():
			return
		}
	}
}

// startPruneLocked starts a Prune in the background, unless one runs: the
// one prune of both the load and the clock. Close waits for it.
func (d *Scheduler) startPruneLocked() {
	if d.pruning || d.closed {
		return
	}
	d.pruning, d.sincePrune = true, 0
	d.prunes.Add(1)
	go func() {
		defer d.prunes.Done()
		if err := d.Prune(); err != nil {
			d.Logf("hostapi: pruning records: %v", err)
		}
		d.mu.Lock()
		d.pruning = false
		d.mu.Unlock()
	}()
}
