package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager/internal/busframe"
	"github.com/unitrun/unitrun/unit"
)

// D-Bus names of the systemd manager.
const (
	busName       = "org.freedesktop.systemd1"
	objectPath    = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIface  = "org.freedesktop.systemd1.Manager"
	UnitIface     = "org.freedesktop.systemd1.Unit"
	ServiceIface  = "org.freedesktop.systemd1.Service"
	propsIface    = "org.freedesktop.DBus.Properties"
	unitPathSpace = dbus.ObjectPath("/org/freedesktop/systemd1/unit")
)

// JobPending reports whether props, properties of the Unit interface,
// show a job of the unit pending (its Job property names one).
func JobPending(props map[string]dbus.Variant) bool {
	v, ok := props["Job"].Value().([]any)
	if !ok || len(v) != 2 {
		return false
	}
	id, _ := v[0].(uint32)
	return id != 0
}

// StopPending reports whether a job that stops the named unit is pending
// on it: a stop, or a restart before its stop is done. A start job is not
// one: while a unit starts (and after each automatic restart, until the
// new run is up) its start job stays pending, also through the
// ExecStopPost= of a run that ended before the start was done.
func (c *Conn) StopPending(ctx context.Context, name string) (bool, error) {
	props, err := c.Properties(ctx, name, UnitIface)
	if err != nil || !JobPending(props) {
		return false, err
	}
	job, _ := props["Job"].Value().([]any)[1].(dbus.ObjectPath)
	obj, err := c.object(ctx, job)
	if err != nil {
		return false, err
	}
	var kind dbus.Variant
	if err := obj.CallWithContext(ctx, propsIface+".Get", 0, "org.freedesktop.systemd1.Job", "JobType").Store(&kind); err != nil {
		return false, err
	}
	// A try-restart is a restart once queued; both stop the unit first.
	return kind.Value() == "stop" || kind.Value() == "restart", nil
}

// ErrClosed is returned by calls on a Conn after Close.
var ErrClosed = errors.New("manager: connection closed")

// Conn is one D-Bus connection to a systemd manager, shared by any number of
// goroutines. It subscribes to the manager's signals once and routes them to
// Watches by unit, so signals are never dropped and no reader can block another.
// When the connection breaks (a daemon-reexec, a bus restart) Conn redials in
// the background; every Watch then receives EventDisconnected and, once the
// connection is back, EventReconnected, after which the watcher must re-read
// the state it was waiting for.
type Conn struct {
	target Target
	// socket is the manager's private socket, for a Conn that reaches it
	// through its bus (Options.OverBus): when the bus cannot be redialled
	// (a bus restart), the Conn redials on the socket, and stays there.
	socket Target

	mu       sync.Mutex
	bus      *dbus.Conn
	stream   *busframe.Stream // bus's stream, on a unix socket (else nil)
	ready    chan struct{}    // closed when bus is usable; replaced on disconnect
	closed   bool
	dialErr  error                          // why the last redial failed
	onSocket bool                           // redialled on socket: a private socket's rules apply
	watches  map[string]map[*Watch]struct{} // by unit name
	byPath   map[dbus.ObjectPath]watched    // by the unit's object path
	done     chan struct{}
	unitPath []string   // the manager's UnitPath, once read
	refs     *dbus.Conn // on a private socket, the bus for AddRef (ref.go)
	// refStream is refs's stream, on a unix socket (else nil).
	refStream *busframe.Stream
	gen       uint64 // bus's number: each connection made gets the next
	gens      uint64 // connections made
}

// Stamp places a signal or a call's answer in the order in which the
// connection received them (across redials: a later connection's come
// after), so that a watcher that read a unit's properties can tell the
// signals older than its read, which its state already includes and
// which would take it back, from the newer ones.
type Stamp struct {
	conn uint64
	seq  dbus.Sequence
}

// Before reports whether s was received before t.
func (s Stamp) Before(t Stamp) bool {
	return s.conn < t.conn || s.conn == t.conn && s.seq < t.seq
}

// Dial connects to the manager that target names and subscribes to its signals.
func Dial(ctx context.Context, target Target) (*Conn, error) {
	return dial(ctx, target, Target{})
}

// dial is Dial, with the private socket that a Conn over a bus falls back
// to (see Conn.socket), if any.
func dial(ctx context.Context, target, socket Target) (*Conn, error) {
	c := &Conn{
		target:  target,
		socket:  socket,
		ready:   make(chan struct{}),
		watches: make(map[string]map[*Watch]struct{}),
		byPath:  make(map[dbus.ObjectPath]watched),
		done:    make(chan struct{}),
	}
	bus, stream, gen, err := c.connect(ctx, target)
	if err != nil {
		return nil, err
	}
	c.bus, c.stream, c.gen = bus, stream, gen
	close(c.ready)
	go c.supervise(bus)
	return c, nil
}

// Target returns where the connection goes.
func (c *Conn) Target() Target { return c.target }

// Close closes the connection. Watches receive EventClosed.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	bus := c.bus
	if c.refs != nil {
		c.refs.Close()
	}
	for _, set := range c.watches {
		for w := range set {
			w.push(Event{Kind: EventClosed})
		}
	}
	c.mu.Unlock()
	if bus != nil {
		return bus.Close()
	}
	return nil
}

// connect dials t, authenticates and, on a bus, subscribes (a manager
// sends its signals to every client of its private socket unasked). It
// returns the busframe.Stream that the connection reads and writes, on a
// unix socket, and the connection's number (see Stamp).
func (c *Conn) connect(ctx context.Context, t Target) (_ *dbus.Conn, _ *busframe.Stream, gen uint64, err error) {
	c.mu.Lock()
	c.gens++
	gen = c.gens
	c.mu.Unlock()
	bus, stream, err := dialBus(t.Address, c.wanted, dbus.WithSignalHandler(signalRouter{c, gen}))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("manager %s: dial %s: %w", t.Spec, t.Address, err)
	}
	if !t.Peer {
		if err := subscribeOnBus(ctx, bus); err != nil {
			bus.Close()
			return nil, nil, 0, fmt.Errorf("manager %s: %w", t.Spec, err)
		}
	}
	return bus, stream, gen, nil
}

// dialBus connects to address and authenticates. On a unix socket (a
// manager's private socket, a bus's) godbus goes through a
// busframe.Stream, returned too, which authenticates in one round trip
// and leaves out the signals that keep does not ask for; on any other
// address, godbus dials and authenticates itself.
func dialBus(address string, keep busframe.KeepFunc, opts ...dbus.ConnOption) (*dbus.Conn, *busframe.Stream, error) {
	opts = append(opts, dbus.WithContext(context.Background()))
	var bus *dbus.Conn
	var stream *busframe.Stream
	var err error
	if path, ok := socketPath(address); ok {
		if stream, err = busframe.Dial(path, keep); err != nil {
			return nil, nil, err
		}
		if bus, err = dbus.NewConn(stream, opts...); err != nil {
			stream.Close()
			return nil, nil, err
		}
	} else if bus, err = dbus.Dial(address, opts...); err != nil {
		return nil, nil, err
	}
	if err := bus.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		bus.Close()
		return nil, nil, fmt.Errorf("authenticate: %w", err)
	}
	return bus, stream, nil
}

// busMatches are the match rules that have the bus send a connection the
// manager's signals that the signal router delivers.
var busMatches = []string{
	"type='signal',sender='" + busName + "',interface='" + managerIface + "',member='JobRemoved'",
	"type='signal',sender='" + busName + "',interface='" + managerIface + "',member='UnitRemoved'",
	"type='signal',sender='" + busName + "',interface='" + propsIface + "',member='PropertiesChanged',path_namespace='" + string(unitPathSpace) + "'",
}

// subscribeOnBus says Hello to a bus, adds busMatches and subscribes to
// the manager's signals, all sent at once and answered in one round
// trip: the bus handles a connection's messages in order, Hello first as
// it must be, and the matches are in place before the manager gets the
// Subscribe. A manager that is not on the bus fails the Subscribe
// (ServiceUnknown). A bus, unlike systemd's private server, needs no
// wake. (godbus's own Hello waits for its answer, and records the
// connection's unique name, which unitrun does not read.)
func subscribeOnBus(ctx context.Context, bus *dbus.Conn) error {
	steps := []string{"hello"}
	calls := []*dbus.Call{bus.BusObject().GoWithContext(ctx, "org.freedesktop.DBus.Hello", 0, nil)}
	for _, rule := range busMatches {
		steps = append(steps, "add match")
		calls = append(calls, bus.BusObject().GoWithContext(ctx, "org.freedesktop.DBus.AddMatch", 0, nil, rule))
	}
	steps = append(steps, "subscribe")
	calls = append(calls, bus.Object(busName, objectPath).GoWithContext(ctx, managerIface+".Subscribe", 0, nil))
	var err error
	for i, call := range calls {
		if e := (<-call.Done).Err; e != nil && err == nil {
			err = fmt.Errorf("%s: %w", steps[i], e)
		}
	}
	return err
}

// wanted reports whether a signal is one the signal router delivers:
// JobRemoved and UnitRemoved, and PropertiesChanged of a watched unit
// whose watches read a property, with the properties they read (nil:
// all). A private socket's busframe.Stream leaves the others out unread.
func (c *Conn) wanted(path dbus.ObjectPath, iface, member string) (bool, map[string]bool) {
	switch {
	case iface == managerIface:
		return member == "JobRemoved" || member == "UnitRemoved", nil
	case iface == propsIface && member == "PropertiesChanged":
		c.mu.Lock()
		w, ok := c.byPath[path]
		c.mu.Unlock()
		return ok && (w.props == nil || len(w.props) > 0), w.props
	}
	return false, nil
}

// supervise waits for the connection to break and redials until Close.
func (c *Conn) supervise(bus *dbus.Conn) {
	var stream *busframe.Stream
	var gen uint64
	for {
		select {
		case <-bus.Context().Done():
		case <-c.done:
			return
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		c.bus, c.stream = nil, nil
		c.ready = make(chan struct{})
		c.broadcastLocked(Event{Kind: EventDisconnected})
		c.mu.Unlock()

		delay := 10 * time.Millisecond
		for {
			t, onSocket := c.redialTarget()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			nb, ns, ng, err := c.connect(ctx, t)
			if err != nil && !onSocket && c.socket.Address != "" {
				// The bus is down (restarted), or the manager not on it
				// yet: its socket carries the signals meanwhile.
				t, onSocket = c.socket, true
				nb, ns, ng, err = c.connect(ctx, t)
			}
			cancel()
			if err == nil {
				bus, stream, gen = nb, ns, ng
				c.mu.Lock()
				c.onSocket = onSocket
				c.mu.Unlock()
				break
			}
			c.mu.Lock()
			c.dialErr = err
			c.mu.Unlock()
			select {
			case <-time.After(delay):
			case <-c.done:
				return
			}
			delay = min(2*delay, time.Second)
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			bus.Close()
			return
		}
		c.bus, c.stream, c.gen = bus, stream, gen
		close(c.ready)
		c.broadcastLocked(Event{Kind: EventReconnected})
		c.mu.Unlock()
	}
}

// redialTarget returns where supervise redials: the socket once the Conn
// is on it, else its target.
func (c *Conn) redialTarget() (Target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.onSocket {
		return c.socket, true
	}
	return c.target, false
}

// peer reports whether the connection is on a private socket: its target's,
// or the one it redialled on (see Conn.socket).
func (c *Conn) peer() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.target.Peer || c.onSocket
}

func (c *Conn) broadcastLocked(ev Event) {
	for _, set := range c.watches {
		for w := range set {
			w.push(ev)
		}
	}
}

// object waits until the connection is usable and returns the manager object
// or the object at path.
func (c *Conn) object(ctx context.Context, path dbus.ObjectPath) (dbus.BusObject, error) {
	bus, _, _, err := c.usable(ctx)
	if err != nil {
		return nil, err
	}
	return bus.Object(busName, path), nil
}

// usable waits until the connection is usable and returns it, with its
// busframe.Stream on a private socket and its number (see Stamp).
func (c *Conn) usable(ctx context.Context) (*dbus.Conn, *busframe.Stream, uint64, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, nil, 0, ErrClosed
		}
		bus, stream, gen, ready := c.bus, c.stream, c.gen, c.ready
		c.mu.Unlock()
		if bus != nil {
			return bus, stream, gen, nil
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, nil, 0, ctx.Err()
		case <-time.After(ReconnectWait):
			c.mu.Lock()
			err := c.dialErr
			c.mu.Unlock()
			return nil, nil, 0, fmt.Errorf("manager %s: not reachable for %v, still redialling: %w", c.target.Spec, ReconnectWait, err)
		}
	}
}

// ReconnectWait bounds how long a call waits for a broken connection to be
// redialled before it fails. A daemon-reexec takes well under it.
var ReconnectWait = 10 * time.Second

// call invokes a method on the manager object and stores its reply in out.
func (c *Conn) call(ctx context.Context, method string, out []any, args ...any) error {
	obj, err := c.object(ctx, objectPath)
	if err != nil {
		return err
	}
	call := obj.CallWithContext(ctx, managerIface+"."+method, 0, args...)
	if call.Err != nil {
		return c.lost(call.Err)
	}
	if len(out) > 0 {
		return call.Store(out...)
	}
	return nil
}

// Aux is a transient unit that StartTransientUnit creates beside the one
// it starts, in the same call: it is created, not started, unless the
// started unit pulls it in (Wants=, Requires=, ...).
type Aux struct {
	Name       string
	Properties []unit.Property
}

// lost returns err, the error of a call; on a bus, that of a call the
// manager never answered (it left the bus to re-execute, or had not
// joined it again) wraps errLostOnBus, as the loss of a private socket's
// connection is told too (IsConnLost).
func (c *Conn) lost(err error) error {
	if c.peer() {
		return err
	}
	return lostOnBus(err)
}

// StartTransientUnit creates and starts a transient unit, creating the aux
// units beside it, and returns its job.
func (c *Conn) StartTransientUnit(ctx context.Context, name, mode string, props []unit.Property, aux ...Aux) (dbus.ObjectPath, error) {
	if c.peer() && addRef(props) {
		return c.startRef(ctx, name, mode, props, aux)
	}
	bus, stream, _, err := c.usable(ctx)
	if err != nil {
		return "", err
	}
	job, err := startTransient(ctx, bus, stream, name, mode, props, aux)
	return job, c.lost(err)
}

// startTransient calls StartTransientUnit on bus, whose stream, if not
// nil, passes the fds of UnixFD values (godbus passes them itself on its
// own socket transport).
func startTransient(ctx context.Context, bus *dbus.Conn, stream *busframe.Stream, name, mode string, props []unit.Property, aux []Aux) (dbus.ObjectPath, error) {
	type prop struct {
		Name  string
		Value dbus.Variant
	}
	// On a busframe.Stream the fds go as indexes, and the stream
	// attaches the fds.
	var fds []int
	ps := make([]prop, len(props))
	for i, p := range props {
		ps[i] = prop{p.Name, p.Value}
		if fd, ok := p.Value.Value().(dbus.UnixFD); ok && stream != nil {
			ps[i].Value = dbus.MakeVariant(dbus.UnixFDIndex(len(fds)))
			fds = append(fds, int(fd))
		}
	}
	// Aux has the shape of the call's aux argument, a(sa(sv)); none (a
	// nil slice) is an empty array.
	args := []any{name, mode, ps, aux}
	var job dbus.ObjectPath
	if fds == nil {
		err := bus.Object(busName, objectPath).CallWithContext(ctx, managerIface+".StartTransientUnit", 0, args...).Store(&job)
		return job, err
	}
	msg := &dbus.Message{Type: dbus.TypeMethodCall, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath:        dbus.MakeVariant(objectPath),
		dbus.FieldDestination: dbus.MakeVariant(busName),
		dbus.FieldInterface:   dbus.MakeVariant(managerIface),
		dbus.FieldMember:      dbus.MakeVariant("StartTransientUnit"),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(args...)),
		dbus.FieldUnixFDs:     dbus.MakeVariant(uint32(len(fds))),
	}, Body: args}
	var call *dbus.Call
	err := stream.SendFDs(fds, func() { call = bus.SendWithContext(ctx, msg, make(chan *dbus.Call, 1)) })
	// godbus ends the call with its reply, or with the error that kept it
	// from being sent or answered.
	call = <-call.Done
	if call.Err != nil {
		return "", call.Err
	}
	if err != nil {
		return "", err
	}
	err = call.Store(&job)
	return job, err
}

// StartUnit starts an existing unit and returns its job.
func (c *Conn) StartUnit(ctx context.Context, name, mode string) (dbus.ObjectPath, error) {
	job, _, err := c.StartUnitAt(ctx, name, mode)
	return job, err
}

// StartUnitAt is StartUnit, and returns the Stamp of the answer: the
// events stamped before it are older than the start (see
// Watch.DropBefore).
func (c *Conn) StartUnitAt(ctx context.Context, name, mode string) (dbus.ObjectPath, Stamp, error) {
	bus, _, gen, err := c.usable(ctx)
	if err != nil {
		return "", Stamp{}, err
	}
	var job dbus.ObjectPath
	call := bus.Object(busName, objectPath).CallWithContext(ctx, managerIface+".StartUnit", 0, name, mode)
	if err := call.Store(&job); err != nil {
		return "", Stamp{}, c.lost(err)
	}
	return job, Stamp{gen, call.ResponseSequence}, nil
}

// StopUnit stops a unit and returns its job.
func (c *Conn) StopUnit(ctx context.Context, name, mode string) (dbus.ObjectPath, error) {
	var job dbus.ObjectPath
	err := c.call(ctx, "StopUnit", []any{&job}, name, mode)
	return job, err
}

// KillUnit sends signal to the processes of a unit; who is "main", "control" or "all".
func (c *Conn) KillUnit(ctx context.Context, name, who string, signal int32) error {
	return c.call(ctx, "KillUnit", nil, name, who, signal)
}

// ResetFailedUnit resets the failed state of a unit, which lets it be collected.
func (c *Conn) ResetFailedUnit(ctx context.Context, name string) error {
	return c.call(ctx, "ResetFailedUnit", nil, name)
}

// A UnitProcess is a process in a unit's cgroup, as systemd lists it
// (systemctl status, systemd-cgls): its cgroup, below the manager's
// root, its process id and its command line.
type UnitProcess struct {
	Cgroup  string
	PID     uint32
	Command string
}

// UnitProcesses returns the processes in the cgroup of the unit name and
// its sub-cgroups; a unit that is not loaded is an error (IsNoSuchUnit).
func (c *Conn) UnitProcesses(ctx context.Context, name string) ([]UnitProcess, error) {
	var procs []UnitProcess
	if err := c.call(ctx, "GetUnitProcesses", []any{&procs}, name); err != nil {
		return nil, err
	}
	return procs, nil
}

// UnitByPID returns the name of the unit that holds the process pid.
func (c *Conn) UnitByPID(ctx context.Context, pid uint32) (string, error) {
	var path dbus.ObjectPath
	if err := c.call(ctx, "GetUnitByPID", []any{&path}, pid); err != nil {
		return "", err
	}
	obj, err := c.object(ctx, path)
	if err != nil {
		return "", err
	}
	v, err := obj.GetProperty(UnitIface + ".Id")
	if err != nil {
		return "", err
	}
	id, ok := v.Value().(string)
	if !ok {
		return "", fmt.Errorf("manager: unit %s: Id is %s, not a string", path, v.Signature())
	}
	return id, nil
}

// Properties returns the properties of the named unit on one interface
// (UnitIface, ServiceIface, ...): all of them, or those named. A unit
// that is not loaded reads as LoadState "not-found".
func (c *Conn) Properties(ctx context.Context, name, iface string, names ...string) (map[string]dbus.Variant, error) {
	props, _, err := c.PropertiesAt(ctx, name, iface, names...)
	return props, err
}

// PropertiesAt is Properties, and returns the Stamp of the answer: the
// EventChanged of the unit's interface stamped before it are older than
// the properties returned. The properties named are read with a Get
// each, all sent at once and answered in one round trip: systemd
// computes every property a GetAll returns, a service's cgroup
// accounting among them.
func (c *Conn) PropertiesAt(ctx context.Context, name, iface string, names ...string) (map[string]dbus.Variant, Stamp, error) {
	if len(names) == 0 {
		bus, _, gen, err := c.usable(ctx)
		if err != nil {
			return nil, Stamp{}, err
		}
		var props map[string]dbus.Variant
		call := bus.Object(busName, unit.BusPath(name)).CallWithContext(ctx, propsIface+".GetAll", 0, iface)
		if err := call.Store(&props); err != nil {
			return nil, Stamp{}, c.lost(err)
		}
		return props, Stamp{gen, call.ResponseSequence}, nil
	}
	return c.Read(ctx, name, iface, names...).Wait()
}

// A Reading is a read of properties that Read sent and that may not be
// answered yet.
type Reading struct {
	c     *Conn
	gen   uint64
	names []string
	calls []*dbus.Call
	err   error
}

// Read sends the reads of the named properties of the unit name on one
// interface, as PropertiesAt makes them, and returns without waiting for
// their answers: a call made after it on the Conn is answered after
// them, so that reads sent together take one round trip.
func (c *Conn) Read(ctx context.Context, name, iface string, names ...string) *Reading {
	bus, _, gen, err := c.usable(ctx)
	r := &Reading{c: c, gen: gen, names: names, err: err}
	if err != nil {
		return r
	}
	obj := bus.Object(busName, unit.BusPath(name))
	for _, n := range names {
		r.calls = append(r.calls, obj.GoWithContext(ctx, propsIface+".Get", 0, nil, iface, n))
	}
	return r
}

// Wait waits for the answers of the read and returns them as PropertiesAt
// does.
func (r *Reading) Wait() (map[string]dbus.Variant, Stamp, error) {
	if r.err != nil {
		return nil, Stamp{}, r.err
	}
	var err error
	props := make(map[string]dbus.Variant, len(r.names))
	for i, call := range r.calls {
		var v dbus.Variant
		if e := (<-call.Done).Store(&v); e != nil && err == nil {
			err = r.c.lost(e)
		}
		props[r.names[i]] = v
	}
	if err != nil {
		return nil, Stamp{}, err
	}
	// The first answer: a signal received before it is older than all.
	return props, Stamp{r.gen, r.calls[0].ResponseSequence}, nil
}

// Loaded reports whether the manager has the named unit loaded. Unlike
// Properties, it loads no unit that is not (systemd's GetUnit), so that
// nothing about the name changes in the manager.
func (c *Conn) Loaded(ctx context.Context, name string) (bool, error) {
	var path dbus.ObjectPath
	err := c.call(ctx, "GetUnit", []any{&path}, name)
	if IsNoSuchUnit(err) {
		return false, nil
	}
	return err == nil, err
}

// ListUnitNames returns the names of the units the manager has loaded whose
// name has the given prefix. The manager filters them (ListUnitsByPatterns),
// so that the answer holds only those, not every unit of a host.
func (c *Conn) ListUnitNames(ctx context.Context, prefix string) ([]string, error) {
	var units []struct {
		Name, Description, LoadState, ActiveState, SubState, Following string
		Path                                                           dbus.ObjectPath
		JobID                                                          uint32
		JobType                                                        string
		JobPath                                                        dbus.ObjectPath
	}
	// systemd matches with fnmatch(3) and FNM_NOESCAPE, so a backslash,
	// which escaped unit names hold, is literal; '*', '?' and '[', which
	// no unit name holds, could only widen the match, and the names are
	// checked against prefix below.
	if err := c.call(ctx, "ListUnitsByPatterns", []any{&units}, []string{}, []string{prefix + "*"}); err != nil {
		return nil, err
	}
	var names []string
	for _, u := range units {
		if len(u.Name) >= len(prefix) && u.Name[:len(prefix)] == prefix {
			names = append(names, u.Name)
		}
	}
	return names, nil
}

// Version returns the manager's systemd version string.
func (c *Conn) Version(ctx context.Context) (string, error) {
	obj, err := c.object(ctx, objectPath)
	if err != nil {
		return "", err
	}
	var v dbus.Variant
	if err := obj.CallWithContext(ctx, propsIface+".Get", 0, managerIface, "Version").Store(&v); err != nil {
		return "", err
	}
	s, _ := v.Value().(string)
	return s, nil
}

// Reload runs daemon-reload; Reexecute runs daemon-reexec (the connection
// drops and is redialled); Exit asks a user manager to exit.
func (c *Conn) Reload(ctx context.Context) error { return c.call(ctx, "Reload", nil) }

// Reexecute asks the manager to re-execute itself (daemon-reexec). The
// connection drops; Conn redials and watches see EventReconnected.
func (c *Conn) Reexecute(ctx context.Context) error {
	err := c.call(ctx, "Reexecute", nil)
	var de dbus.Error
	if err != nil && !errors.As(err, &de) {
		return nil // the manager closes the connection instead of answering
	}
	return err
}

// Exit asks the manager to exit (systemctl exit).
func (c *Conn) Exit(ctx context.Context) error { return c.call(ctx, "Exit", nil) }

// IsUnitExists reports whether err is systemd's answer to creating a unit
// whose name is already taken.
func IsUnitExists(err error) bool {
	var de dbus.Error
	return errors.As(err, &de) && de.Name == "org.freedesktop.systemd1.UnitExists"
}

// IsConnLost reports whether err ended a call because the connection to
// the manager broke under it (a daemon-reexec closes every connection, so
// does a bus restart): the call may or may not have reached the manager,
// and only what the manager shows once it is back tells. A reply of the
// manager, the end of the call's context and a closed Conn (ErrClosed)
// are not.
func IsConnLost(err error) bool {
	for _, e := range []error{errLostOnBus, dbus.ErrClosed, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, syscall.EPIPE, syscall.ECONNRESET} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// IsNoSuchUnit reports whether err says the unit is not loaded.
func IsNoSuchUnit(err error) bool {
	var de dbus.Error
	return errors.As(err, &de) && (de.Name == "org.freedesktop.systemd1.NoSuchUnit" || de.Name == "org.freedesktop.systemd1.NoUnitForPID")
}

// RuntimeUnitDir returns the directory in the manager's unit search path
// where units that live until reboot belong (/run/systemd/system for the
// system manager, $XDG_RUNTIME_DIR/systemd/user for a user manager). Units
// written there take effect after Reload.
func (c *Conn) RuntimeUnitDir(ctx context.Context) (string, error) {
	return c.unitPathDir(ctx, "runtime unit directory", func(p string) bool {
		return p == "/run/systemd/system" || strings.HasSuffix(p, "/systemd/user") && !strings.HasPrefix(p, "/etc/") && !strings.HasPrefix(p, "/usr/") && !strings.Contains(p, "/.config/")
	})
}

// TransientUnitDir returns the directory in the manager's unit search path
// that holds the files of its transient units (/run/systemd/transient,
// $XDG_RUNTIME_DIR/systemd/transient). systemd removes a transient unit's
// drop-ins in it when it frees the unit (not when it reloads or
// re-executes), whoever wrote them.
func (c *Conn) TransientUnitDir(ctx context.Context) (string, error) {
	return c.unitPathDir(ctx, "transient unit directory", func(p string) bool {
		return strings.HasSuffix(p, "/systemd/transient")
	})
}

// UnitPath returns the manager's unit search path (its UnitPath
// property): the directories it reads unit files from, in order. It is
// read once: it does not change while the manager runs.
func (c *Conn) UnitPath(ctx context.Context) ([]string, error) {
	c.mu.Lock()
	paths := c.unitPath
	c.mu.Unlock()
	if paths != nil {
		return paths, nil
	}
	obj, err := c.object(ctx, objectPath)
	if err != nil {
		return nil, err
	}
	var v dbus.Variant
	if err := obj.CallWithContext(ctx, propsIface+".Get", 0, managerIface, "UnitPath").Store(&v); err != nil {
		return nil, err
	}
	paths, _ = v.Value().([]string)
	c.mu.Lock()
	c.unitPath = paths
	c.mu.Unlock()
	return paths, nil
}

// unitPathDir returns the first directory of the manager's unit search
// path that match accepts; what names it, for the error if none does.
func (c *Conn) unitPathDir(ctx context.Context, what string, match func(string) bool) (string, error) {
	paths, err := c.UnitPath(ctx)
	if err != nil {
		return "", err
	}
	for _, p := range paths {
		if match(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("manager %s: no %s in its unit path %v", c.target.Spec, what, paths)
}

// AttachProcessesToUnit moves the processes pids into the cgroup of the
// named unit, which must be active and delegated (Delegate=yes): the
// unit's limits then hold them and its stop ends them (systemd 238 and
// later).
func (c *Conn) AttachProcessesToUnit(ctx context.Context, name string, pids ...uint32) error {
	return c.call(ctx, "AttachProcessesToUnit", nil, name, "", pids)
}
