package main

import (
	"github.com/unitrun/unitrun/internal/pty"
	"github.com/unitrun/unitrun/unit"
)

// ptyProperties are the settings that give a unit the terminal p, as
// systemd-run --pty gives one: the unit opens it by TTYPath= with
// StandardInput=tty and StandardOutput=tty, StandardError=tty, so systemd
// makes it the command's controlling terminal.
func ptyProperties(p *pty.PTY) []unit.Property {
	var props []unit.Property
	for _, a := range []string{"TTYPath=" + p.Path, "StandardInput=tty", "StandardOutput=tty", "StandardError=tty"} {
		ps, err := unit.ParseProperty(a)
		if err != nil {
			panic(err) // the assignments above are valid
		}
		props = append(props, ps...)
	}
	return props
}
