// Package hostapi is the unitrun host API daemon: the Daemon that runs
// the ops of its config (package config: which host operations exist and
// who may call them), that is, admits, queues and runs them as jobs on a systemd manager and recovers
// them after a restart, the durable store of job records that lets a
// restarted daemon report every job's real outcome, its metrics and logs,
// and the three front ends that serve callers: HTTP/JSON on a unix stream
// socket, the SOCK_SEQPACKET wire format on a unix seqpacket socket, and
// D-Bus (org.unitrun.Ops1), each an adapter over Core and the wire types
// of package api. Each front end authorizes a call by its
// caller's credentials and keeps to the daemon's connection limits.
//
// Run is the daemon's whole life in one call: config, store, sockets,
// recovery, serving, pruning, sd_notify, reload on SIGHUP and shutdown.
package hostapi
