package hostapi

// pruneLocked starts a Prune in the background once a tenth of
// records_keep jobs (at least one) have finished since the last one, so
// that the records stay near the limit under sustained load rather than
// only at the daemon's start and hourly prunes. One runs at a time.
func (d *Daemon) pruneLocked() {
	d.sincePrune++
	if d.pruning || d.sincePrune < max(d.cfg.Limits.RecordsKeep/10, 1) {
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
