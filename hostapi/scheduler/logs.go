package scheduler

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// followPoll is how often a followed log is re-read for new output.
const followPoll = 50 * time.Millisecond

// CopyOutput copies the job's output log, from byte offset on, to w. With
// follow, it goes on copying what the job's unit appends until the job has
// ended (then it copies the rest and returns) or ctx ends. A unit op's
// output log is the copy of its run's journal entries that the daemon
// makes when the run ends (copyJournal): empty until then.
// flush, when not nil, is called after each chunk.
func (d *Scheduler) CopyOutput(ctx context.Context, w io.Writer, id string, offset int64, follow bool, flush func()) error {
	if _, err := d.Get(id); err != nil {
		return err
	}
	var f *os.File
	buf := make([]byte, 32<<10)
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for {
		// Look at done before copying, so that all output written before
		// the job ended is copied once it has.
		done := d.Done(id)
		if f == nil {
			var err error
			f, err = d.store.ReadOutput(id)
			if errors.Is(err, fs.ErrNotExist) {
				f = nil
			} else if err != nil {
				return err
			} else if _, err := f.Seek(offset, io.SeekStart); err != nil {
				return err
			}
		}
		if f != nil {
			n, err := d.store.CopyOutput(w, id, f, buf)
			if err != nil {
				return err
			}
			if n > 0 && flush != nil {
				flush()
			}
		}
		if !follow || done == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
		case <-time.After(followPoll):
		}
	}
}
