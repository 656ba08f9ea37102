package scheduler

import (
	"reflect"

	"github.com/unitrun/unitrun/hostapi/config"
)

// opSet is the ops a daemon serves, in config order and by name. A reload
// replaces the whole set at once, so that a call sees either the old ops
// or the new ones, never a mix.
type opSet struct {
	list   []*config.Op
	byName map[string]*config.Op
}

func newOpSet(ops []config.Op) *opSet {
	s := &opSet{byName: make(map[string]*config.Op, len(ops))}
	for i := range ops {
		s.list = append(s.list, &ops[i])
		s.byName[ops[i].Name] = &ops[i]
	}
	return s
}

// lookupOp returns the op named name that new calls get.
func (d *Scheduler) lookupOp(name string) (*config.Op, bool) {
	op, ok := d.ops.Load().byName[name]
	return op, ok
}

// Reload makes cfg's ops the ones that new calls, listings and the
// authorization of record reads get; an op it no longer holds is refused
// as unknown. Jobs queued or running keep the op they were called with,
// and run to their end as it says. cfg's [limits] do not apply: the
// daemon keeps those it started with (they size its sockets and
// counters), and Reload reports whether cfg's differ, so that the caller
// can tell that a restart applies them.
func (d *Scheduler) Reload(cfg *config.Config) (limitsDiffer bool) {
	d.ops.Store(newOpSet(cfg.Ops))
	return !reflect.DeepEqual(cfg.Limits, d.cfg.Limits)
}
