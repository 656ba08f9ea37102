// Package dist holds the files unitrun ships for hosts: the systemd units
// of the host API daemon, embedded so that "unitrun install" can put them
// in place.
package dist

import "embed"

// Systemd holds systemd/*.socket and systemd/*.service.
//
//go:embed systemd/*.socket systemd/*.service
var Systemd embed.FS

// DaemonUnits are the units "unitrun install" installs, sockets first.
var DaemonUnits = []string{"unitrun.socket", "unitrun-argv.socket", "unitrun.service"}

// InstalledBinary is the path the shipped units run unitrun from.
const InstalledBinary = "/usr/bin/unitrun"
