// Package unit holds what unitrun knows about systemd units as plain values:
// unit names and their escaping, the quoting rules of unit files, unit-file
// rendering and the typed D-Bus properties of transient units. How a
// service's main process ended and the names of signals live in package
// unit/exit (the standard library alone, for the pods' exit hook); [Exit]
// names its Exit for the users of package job.
//
// The rules are those of systemd 252, as documented in systemd.unit(5),
// systemd.syntax(7), systemd.service(5), systemd.exec(5),
// systemd.resource-control(5) and systemd-escape(1). Where the documentation
// is silent, the package follows systemd's own parsers (unit-name.c,
// extract-word.c, time-util.c, parse-util.c, bus-unit-util.c), and its tests
// compare it with systemd's binaries and, where available, with the
// functions of systemd's shared library.
//
// The package performs no I/O.
package unit
