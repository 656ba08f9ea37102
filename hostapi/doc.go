// Package hostapi holds the pure foundations of the unitrun host API daemon:
// the operations config (which host operations exist and who may call
// them), the SOCK_SEQPACKET wire format, and the durable store of job
// records that lets a restarted daemon report every job's real outcome.
//
// Nothing here talks to systemd; the daemon wires these pieces to the job
// package.
package hostapi
