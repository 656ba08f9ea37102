// Package hostapi is the unitrun host API daemon: the Daemon that runs the
// ops of its config (package config: which host operations exist and who
// may call them) as jobs on a systemd manager, the durable store of job records that
// lets a restarted daemon report every job's real outcome, and the front
// ends that serve callers over unix sockets (HTTP/JSON and the
// SOCK_SEQPACKET wire format).
package hostapi
