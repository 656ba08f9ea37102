// Package dist holds the files unitrun ships for hosts, the systemd units
// of the host API daemon and the D-Bus files of its bus name, embedded,
// and puts them in place on a host (Install.Install, Install.Uninstall:
// what "unitrun install" and "unitrun uninstall" do).
package dist

import "embed"

// Systemd holds systemd/*.socket and systemd/*.service.
//
//go:embed systemd/*.socket systemd/*.service
var Systemd embed.FS

// DBus holds dbus/org.unitrun.Ops1.service (bus activation of
// unitrun.service) and dbus/org.unitrun.Ops1.conf (the bus policy: root
// owns the name, anyone may call it).
//
//go:embed dbus/org.unitrun.Ops1.service dbus/org.unitrun.Ops1.conf
var DBus embed.FS

// DaemonUnits are the units "unitrun install" installs, sockets first.
var DaemonUnits = []string{"unitrun.socket", "unitrun-argv.socket", "unitrun.service"}

// InstalledBinary is the path the shipped units run unitrun from.
const InstalledBinary = "/usr/bin/unitrun"
