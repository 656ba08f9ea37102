package manager

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/unit"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventJobRemoved: a job of the unit finished; Job and Result are set.
	EventJobRemoved EventKind = iota + 1
	// EventChanged: properties of the unit changed; Interface and Props are set.
	EventChanged
	// EventRemoved: the manager unloaded the unit.
	EventRemoved
	// EventDisconnected: the connection broke; signals may be missed until
	// EventReconnected.
	EventDisconnected
	// EventReconnected: the connection is back; re-read what you wait for.
	EventReconnected
	// EventClosed: the Conn was closed; no more events follow.
	EventClosed
)

// Event is one thing that happened to a watched unit or to the connection.
type Event struct {
	Kind      EventKind
	Job       dbus.ObjectPath
	Result    string
	Interface string
	Props     map[string]dbus.Variant
	Stamp     Stamp // when the connection received the signal (not set for connection events)
}

// Watch receives, in order and without loss, the events of one unit from the
// moment it is created. Register it before starting the unit so no signal can
// be missed. Events queue without bound; Close releases the Watch.
type Watch struct {
	c     *Conn
	unit  string
	props map[string]bool // the properties it reads; nil: all

	mu     sync.Mutex
	queue  []Event
	notify chan struct{}
}

// Watch starts recording the events of the named unit, EventChanged with
// every property that changed.
func (c *Conn) Watch(name string) *Watch { return c.watch(name, nil) }

// WatchProps is Watch for a watcher that reads only the named properties:
// its EventChanged events carry only those, and none is sent when none of
// them changed, so that with no names it gets no EventChanged. On a
// private socket, where the manager sends every property of an interface
// at each change, the properties that no Watch of the unit reads are left
// out of the signals before they are decoded; so a Watch made beside
// another of the unit that reads fewer may find, in signals already on
// their way, only the properties that one reads.
func (c *Conn) WatchProps(name string, props ...string) *Watch {
	set := make(map[string]bool, len(props))
	for _, p := range props {
		set[p] = true
	}
	return c.watch(name, set)
}

func (c *Conn) watch(name string, props map[string]bool) *Watch {
	w := &Watch{c: c, unit: name, props: props, notify: make(chan struct{}, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		w.push(Event{Kind: EventClosed})
		return w
	}
	set := c.watches[name]
	if set == nil {
		set = make(map[*Watch]struct{})
		c.watches[name] = set
	}
	set[w] = struct{}{}
	c.indexLocked(name)
	return w
}

// indexLocked records, by the unit's object path, the name of a watched
// unit and the properties its watches read: nil if one reads all, else
// their union.
func (c *Conn) indexLocked(name string) {
	path := unit.BusPath(name)
	set := c.watches[name]
	if len(set) == 0 {
		delete(c.byPath, path)
		return
	}
	w := watched{name: name, props: map[string]bool{}}
	for x := range set {
		if x.props == nil {
			w.props = nil
			break
		}
		for p := range x.props {
			w.props[p] = true
		}
	}
	c.byPath[path] = w
}

// watched is what Conn knows of a watched unit by its object path.
type watched struct {
	name  string
	props map[string]bool // read by its watches; nil: all
}

// Unit returns the name of the watched unit.
func (w *Watch) Unit() string { return w.unit }

// Close stops recording.
func (w *Watch) Close() {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.watches[w.unit]
	delete(set, w)
	if len(set) == 0 {
		delete(c.watches, w.unit)
	}
	c.indexLocked(w.unit)
}

// DropBefore drops the queued events of the unit that the connection
// received before s, the stamp of a call's answer (StartUnitAt): they
// tell of the unit before the call, such as the UnitRemoved of a load
// that a read of its properties made, which WaitJob would otherwise ask
// the manager about. The events of the connection itself stay.
func (w *Watch) DropBefore(s Stamp) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = slices.DeleteFunc(w.queue, func(ev Event) bool {
		switch ev.Kind {
		case EventJobRemoved, EventChanged, EventRemoved:
			return ev.Stamp.Before(s)
		}
		return false
	})
}

// Next returns the next event, waiting for one until ctx is done.
func (w *Watch) Next(ctx context.Context) (Event, error) {
	for {
		if ev, ok := w.pop(); ok {
			return ev, nil
		}
		select {
		case <-w.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// WaitJob reads the watch's events until job is removed and returns its
// result, as systemd's JobRemoved gives it ("done", "canceled", "failed",
// "timeout", "dependency" or "skipped"). Every event is passed to seen
// first, if seen is not nil, so that a caller can keep the unit's state
// as it goes. The result is "" for a job that ended unseen: when the unit
// is unloaded, or the connection is back after signals may have been
// missed, and the unit is then found not loaded or with this job no
// longer pending, and no JobRemoved of it is queued. WaitJob returns
// ctx's error if ctx ends first, and ErrClosed once the Conn is closed.
func (w *Watch) WaitJob(ctx context.Context, job dbus.ObjectPath, seen func(Event)) (string, error) {
	gone := false // the job is not pending: what is queued tells the rest
	for {
		ev, ok := w.pop()
		if !ok && gone {
			return "", nil
		}
		if !ok {
			var err error
			if ev, err = w.Next(ctx); err != nil {
				return "", err
			}
		}
		if seen != nil {
			seen(ev)
		}
		switch ev.Kind {
		case EventJobRemoved:
			if ev.Job == job {
				return ev.Result, nil
			}
		case EventRemoved, EventReconnected:
			// An EventRemoved may be of the unit's earlier load (one
			// loaded by a read, say, and collected since). A job
			// removed before the manager's answer had its JobRemoved
			// queued before the answer came.
			if pending, err := w.c.jobPending(ctx, w.unit, job); err == nil && !pending {
				gone = true
			}
		case EventClosed:
			return "", ErrClosed
		}
	}
}

// jobPending reports whether the named unit is loaded with job pending.
// It loads no unit that is not, as Loaded does.
func (c *Conn) jobPending(ctx context.Context, name string, job dbus.ObjectPath) (bool, error) {
	if ok, err := c.Loaded(ctx, name); err != nil || !ok {
		return false, err
	}
	props, err := c.Properties(ctx, name, UnitIface)
	if err != nil {
		return false, err
	}
	v, _ := props["Job"].Value().([]any)
	return len(v) == 2 && v[1] == job, nil
}

// pop returns the event at the head of the queue, if there is one,
// without waiting.
func (w *Watch) pop() (Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return Event{}, false
	}
	ev := w.queue[0]
	w.queue[0] = Event{}
	w.queue = w.queue[1:]
	return ev, true
}

func (w *Watch) push(ev Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// signalRouter is the handler of the connection numbered gen. godbus
// calls it from its single reader goroutine; it never blocks.
type signalRouter struct {
	c   *Conn
	gen uint64
}

func (r signalRouter) DeliverSignal(iface, member string, s *dbus.Signal) {
	var name string
	var ev Event
	switch {
	case iface == managerIface && member == "JobRemoved":
		// (u id, o job, s unit, s result)
		if len(s.Body) != 4 {
			return
		}
		job, _ := s.Body[1].(dbus.ObjectPath)
		name, _ = s.Body[2].(string)
		result, _ := s.Body[3].(string)
		ev = Event{Kind: EventJobRemoved, Job: job, Result: result}
	case iface == managerIface && member == "UnitRemoved":
		// (s unit, o path)
		if len(s.Body) != 2 {
			return
		}
		name, _ = s.Body[0].(string)
		ev = Event{Kind: EventRemoved}
	case iface == propsIface && member == "PropertiesChanged":
		// (s interface, a{sv} changed, as invalidated)
		if len(s.Body) < 2 {
			return
		}
		in, _ := s.Body[0].(string)
		props, _ := s.Body[1].(map[string]dbus.Variant)
		ev = Event{Kind: EventChanged, Interface: in, Props: props}
	default:
		return
	}
	ev.Stamp = Stamp{r.gen, s.Sequence}
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Kind == EventChanged {
		name = c.byPath[s.Path].name
	}
	for w := range c.watches[name] {
		if ev, ok := w.filter(ev); ok {
			w.push(ev)
		}
	}
}

// filter returns ev as w is to get it: an EventChanged with only the
// properties w reads, and none at all when none of them changed.
func (w *Watch) filter(ev Event) (Event, bool) {
	if ev.Kind != EventChanged || w.props == nil {
		return ev, true
	}
	n := 0
	for k := range ev.Props {
		if w.props[k] {
			n++
		}
	}
	if n == len(ev.Props) {
		return ev, n > 0
	}
	props := make(map[string]dbus.Variant, n)
	for k, v := range ev.Props {
		if w.props[k] {
			props[k] = v
		}
	}
	ev.Props = props
	return ev, n > 0
}

// RunJob queues a job for unit u with enqueue (c.StartUnit, c.StopUnit,
// ...), in mode "replace", and waits until it is removed. A job that does
// not end "done" is an error; one that ended unseen while the connection
// was down is taken as done.
func (c *Conn) RunJob(ctx context.Context, u string, enqueue func(context.Context, string, string) (dbus.ObjectPath, error)) error {
	w := c.WatchProps(u) // only its jobs
	defer w.Close()
	job, err := enqueue(ctx, u, "replace")
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	result, err := w.WaitJob(ctx, job, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	if result != "" && result != "done" {
		return fmt.Errorf("job for %s: %s", u, result)
	}
	return nil
}
