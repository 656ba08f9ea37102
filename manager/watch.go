package manager

import (
	"context"
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
}

// Watch receives, in order and without loss, the events of one unit from the
// moment it is created. Register it before starting the unit so no signal can
// be missed. Events queue without bound; Close releases the Watch.
type Watch struct {
	c    *Conn
	unit string

	mu     sync.Mutex
	queue  []Event
	notify chan struct{}
}

// Watch starts recording the events of the named unit.
func (c *Conn) Watch(name string) *Watch {
	w := &Watch{c: c, unit: name, notify: make(chan struct{}, 1)}
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
		c.byPath[unit.BusPath(name)] = name
	}
	set[w] = struct{}{}
	return w
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
		delete(c.byPath, unit.BusPath(w.unit))
	}
}

// Next returns the next event, waiting for one until ctx is done.
func (w *Watch) Next(ctx context.Context) (Event, error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			ev := w.queue[0]
			w.queue[0] = Event{}
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return ev, nil
		}
		w.mu.Unlock()
		select {
		case <-w.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
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

// signalRouter is the connection's signal handler. godbus calls it from its
// single reader goroutine; it never blocks.
type signalRouter struct{ c *Conn }

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
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Kind == EventChanged {
		name = c.byPath[s.Path]
	}
	for w := range c.watches[name] {
		w.push(ev)
	}
}
