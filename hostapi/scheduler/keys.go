package scheduler

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/unitrun/unitrun/api"
)

// keyOf is the index entry of a call's idempotency key: keys are scoped
// to the op and the caller's uid, so that one caller's key never names
// another's job.
func keyOf(op string, uid uint32, key string) string {
	return op + "\x00" + strconv.FormatUint(uint64(uid), 10) + "\x00" + key
}

// indexKeyLocked records the job of rec's key, if it has one.
func (d *Scheduler) indexKeyLocked(rec *api.Record) {
	if rec.Key != "" {
		d.keys[keyOf(rec.Op, rec.CallerUID, rec.Key)] = rec.ID
	}
}

// dropKeyLocked takes the job's key out of the index and its record, so
// that no later call finds the job by it.
func (d *Scheduler) dropKeyLocked(l *liveJob) {
	if l.rec.Key == "" {
		return
	}
	if k := keyOf(l.rec.Op, l.rec.CallerUID, l.rec.Key); d.keys[k] == l.rec.ID {
		delete(d.keys, k)
	}
	l.rec.Key = ""
}

// keyedLocked returns a copy of the record of the job that uid started
// with key for op, or nil when there is none (or its record was pruned),
// or when that job failed before its command ran (neverRan): that job
// gives up the key, so that the call is made again. The error has
// CodeKeyConflict when that job had other args.
func (d *Scheduler) keyedLocked(op string, uid uint32, key string, args []string) (*api.Record, error) {
	k := keyOf(op, uid, key)
	id, ok := d.keys[k]
	if !ok {
		return nil, nil
	}
	var rec *api.Record
	if l := d.live[id]; l != nil {
		rec = copyRecord(l.rec)
	} else if r, err := d.store.Get(id); err == nil {
		rec = r
	} else {
		delete(d.keys, k)
		return nil, nil
	}
	if !slices.Equal(rec.Args, args) {
		return nil, errorf(api.CodeKeyConflict, fmt.Sprintf("op %q: key %q names job %s, called with other args %q", op, key, id, rec.Args))
	}
	if neverRan(rec) {
		// Stored without the key first, so that a daemon that restarts
		// never finds two jobs of one key.
		rec.Key = ""
		if err := d.store.Put(rec); err != nil {
			d.Logf("hostapi: job %s: giving up key %q of a job that never ran: %v", id, key, err)
			rec.Key = key
			return rec, nil
		}
		delete(d.keys, k)
		return nil, nil
	}
	return rec, nil
}

// neverRan reports whether rec is of a job that failed before its command
// ran: its start job did not complete (a job_result other than done) and
// systemd made no run of it (no invocation ID, exit code or signal).
func neverRan(rec *api.Record) bool {
	return rec.State == api.StateFailed && rec.JobResult != "" && rec.JobResult != "done" &&
		rec.InvocationID == "" && rec.ExitCode == nil && rec.Signal == ""
}
