package main

import (
	"fmt"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/hostapi"
)

// checkBusFlag refuses a --dbus value that names no bus: one that is
// not "", "system", "session" or an address of the form TRANSPORT:KEYS.
func checkBusFlag(bus string) error {
	switch bus {
	case "", "system", "session":
		return nil
	}
	if transport, _, ok := strings.Cut(bus, ":"); ok && transport != "" {
		return nil
	}
	return fmt.Errorf("--dbus %q: must be system, session or a D-Bus address such as unix:path=/run/dbus/system_bus_socket", bus)
}

// connectBus connects to the bus that --dbus names: "system", "session",
// or a D-Bus address such as unix:path=/run/dbus/system_bus_socket.
func connectBus(bus string) (*dbus.Conn, error) {
	var conn *dbus.Conn
	var err error
	switch bus {
	case "system":
		conn, err = dbus.ConnectSystemBus()
	case "session":
		conn, err = dbus.ConnectSessionBus()
	default:
		conn, err = dbus.Connect(bus)
	}
	if err != nil {
		return nil, fmt.Errorf("--dbus %s: %w", bus, err)
	}
	return conn, nil
}

// serveBus connects to bus and serves d's D-Bus front end there.
func serveBus(d *hostapi.Daemon, bus string) (*dbus.Conn, error) {
	conn, err := connectBus(bus)
	if err != nil {
		return nil, err
	}
	if err := d.ServeDBus(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("--dbus %s: %w", bus, err)
	}
	return conn, nil
}
