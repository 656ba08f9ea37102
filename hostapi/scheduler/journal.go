package scheduler

import (
	"context"
	"io"

	"github.com/unitrun/unitrun/job"
)

// journalOutputMax bounds the journal output copied into a job's log.
const journalOutputMax = 16 << 20

// copyJournal writes into the job's output log what the run of a unit op
// logged to the manager's journal, as job.CopyJournal chooses and writes
// it, at most journalOutputMax bytes. A unit op's unit is the host's own
// and logs where it says, which for services is the journal: this is how
// the record's output tail and the logs endpoint see it.
func (d *Scheduler) copyJournal(ctx context.Context, id string, st *job.Status) error {
	out, err := d.store.OpenOutput(id)
	if err != nil {
		return err
	}
	defer out.Close()
	w := &capped{w: out, left: journalOutputMax}
	if err := job.CopyJournal(ctx, d.mgr.Target().Journal, st, w, w); err != nil {
		return err
	}
	if w.err != nil {
		return w.err
	}
	return out.Sync()
}

// capped writes to w until left bytes are written, and drops the rest. A
// write error is kept, and later writes dropped, so that the journal's copy
// goes on to its end.
type capped struct {
	w    io.Writer
	left int
	err  error
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if c.err != nil || c.left <= 0 {
		return n, nil
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	m, err := c.w.Write(p)
	c.left -= m
	c.err = err
	return n, nil
}
