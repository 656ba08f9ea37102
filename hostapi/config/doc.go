// Package config reads the host API daemon's operations config: daemon.toml
// and the *.toml drop-ins of its ops dir, decoded into the ops callers may
// run (Op: who may call it, the argv or unit it starts, its environment,
// retry policy and timeout) and the daemon's Limits.
//
// Every file and directory on the way to the config is judged as sshd's
// StrictModes judges a user's files, since whoever may write the config
// chooses what the daemon runs as root. Every broken rule is an *Error
// naming the file, the line, the field and the rule.
package config
