package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager/internal/busframe"
	"github.com/unitrun/unitrun/unit"
)

// systemd keeps a unit for a caller (AddRef=yes, Ref) by tracking the
// caller's unique name on a bus: the unit is not collected while the name
// is there, however its run ends, and is collected once the caller's
// connection is gone (a killed process, too). On a private socket the
// caller has no name, and systemd 252 refuses AddRef=yes with "Invalid
// argument"; systemd-run --wait connects through the bus for that reason.
// So does Conn, for these calls alone: refs is a connection of its own to
// the bus the manager is on. The bus outlives a daemon-reexec, and systemd
// 252 saves the names it tracks across one, so a unit stays kept through
// it (TestAddRefAcrossReexec).

// refAddress returns the address of the bus the manager of t is on, for
// a private socket, or "" if there is none to try.
func (t Target) refAddress() string {
	for _, kv := range t.Env {
		if v, ok := strings.CutPrefix(kv, "DBUS_SESSION_BUS_ADDRESS="); ok {
			return v
		}
	}
	if p, ok := socketPath(t.Address); ok && p == "/run/systemd/private" {
		if addr := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS"); addr != "" {
			return addr
		}
		return unixAddress("/run/dbus/system_bus_socket")
	}
	return ""
}

// overBus returns the target that reaches the manager of t, a private
// socket, through the session bus it is on (Options.OverBus), if there is
// one to try. The system manager is left on its socket: a connection on
// the system bus is sent every unit's PropertiesChanged (the matches of
// connect), which a busy host makes many.
func (t Target) overBus() (Target, bool) {
	addr := t.refAddress()
	if p, _ := socketPath(t.Address); !t.Peer || addr == "" || p == "/run/systemd/private" {
		return Target{}, false
	}
	return Target{Spec: t.Spec, Address: addr, Env: t.Env, Journal: t.Journal}, true
}

// CanRef reports whether the manager can keep units for this connection:
// whether a StartTransientUnit with the property AddRef=yes, and Unref,
// can be made. On a bus they can; on a private socket they go over the
// bus the manager is on, which CanRef dials once it is there with the
// manager on it (until then, each call tries again).
func (c *Conn) CanRef(ctx context.Context) bool {
	_, _, err := c.refConn(ctx)
	return err == nil
}

// refConn returns the connection that AddRef and Unref go through, and
// its busframe.Stream, on a unix socket.
func (c *Conn) refConn(ctx context.Context) (*dbus.Conn, *busframe.Stream, error) {
	if !c.peer() {
		bus, stream, _, err := c.usable(ctx)
		return bus, stream, err
	}
	c.mu.Lock()
	refs, stream, closed := c.refs, c.refStream, c.closed
	c.mu.Unlock()
	if closed {
		return nil, nil, ErrClosed
	}
	if refs != nil && refs.Connected() {
		return refs, stream, nil
	}
	addr := c.target.refAddress()
	if addr == "" {
		return nil, nil, errNoRefBus
	}
	// No signal is read on it.
	refs, stream, err := dialBus(addr, func(dbus.ObjectPath, string, string) (bool, map[string]bool) { return false, nil })
	if err != nil {
		return nil, nil, err
	}
	// Hello first, as a bus requires, and the question behind it, both
	// answered in one round trip.
	hello := refs.BusObject().GoWithContext(ctx, "org.freedesktop.DBus.Hello", 0, nil)
	has := refs.BusObject().GoWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, nil, busName)
	var there bool
	if err := (<-hello.Done).Err; err != nil {
		refs.Close()
		return nil, nil, err
	}
	if err := (<-has.Done).Store(&there); err != nil || !there {
		refs.Close()
		return nil, nil, errNoRefBus
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		refs.Close()
		return nil, nil, ErrClosed
	}
	if c.refs != nil && c.refs.Connected() {
		refs.Close() // another call dialled meanwhile: units are kept on its connection
		return c.refs, c.refStream, nil
	}
	c.refs, c.refStream = refs, stream
	return refs, stream, nil
}

// errNoRefBus says that no bus with the manager on it is reachable.
var errNoRefBus = errors.New("manager: no bus with the manager on it")

// addRef reports whether props ask for AddRef=yes.
func addRef(props []unit.Property) bool {
	for _, p := range props {
		if v, ok := p.Value.Value().(bool); ok && p.Name == "AddRef" && v {
			return true
		}
	}
	return false
}

// startRef is StartTransientUnit for a unit with AddRef=yes, on a private
// socket: the call goes over the bus.
func (c *Conn) startRef(ctx context.Context, name, mode string, props []unit.Property, aux []Aux) (dbus.ObjectPath, error) {
	refs, stream, err := c.refConn(ctx)
	if err != nil {
		return "", err
	}
	job, err := startTransient(ctx, refs, stream, name, mode, props, aux)
	return job, lostOnBus(err)
}

// errLostOnBus is a call that the manager never answered on the bus: it
// left the bus to re-execute, or had not joined it again. Like the loss of
// a private socket's connection, it is not the manager's own answer, and
// the call may or may not have taken effect ([IsConnLost]).
var errLostOnBus = errors.New("manager: call lost on the bus")

// lostOnBus turns the bus's answers for a call that the manager never
// answered into an error wrapping errLostOnBus that is not a dbus.Error.
func lostOnBus(err error) error {
	var de dbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.ServiceUnknown",
			"org.freedesktop.DBus.Error.NameHasNoOwner", "org.freedesktop.DBus.Error.Disconnected":
			return fmt.Errorf("%w: %s", errLostOnBus, de.Error())
		}
	}
	return err
}

// Ref keeps the unit name for this connection, as AddRef=yes keeps the
// unit it starts: systemd does not collect it, however its run ends,
// until Unref or until the connection is gone. systemd loads a unit that
// is not loaded (from its file); one that cannot be loaded (not found,
// masked, a bad setting) gives the manager's error (NoSuchUnit, ...).
func (c *Conn) Ref(ctx context.Context, name string) error {
	return c.callRef(ctx, "RefUnit", name)
}

// Unref drops the reference that AddRef=yes or Ref took for this
// connection, so that systemd may collect the unit once it is inactive
// (or failed, with CollectMode=inactive-or-failed).
func (c *Conn) Unref(ctx context.Context, name string) error {
	return c.callRef(ctx, "UnrefUnit", name)
}

// callRef calls the manager's method (RefUnit, UnrefUnit) for the unit
// name on the connection that AddRef goes through.
func (c *Conn) callRef(ctx context.Context, method, name string) error {
	refs, _, err := c.refConn(ctx)
	if err != nil {
		return err
	}
	return lostOnBus(refs.Object(busName, objectPath).CallWithContext(ctx, managerIface+"."+method, 0, name).Err)
}
