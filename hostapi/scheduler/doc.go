// Package scheduler is the scheduler of the unitrun host API daemon: the
// Scheduler that runs the ops of its config (package hostapi/config: which
// host operations exist and who may call them), that is, admits, queues
// and runs them as jobs on a systemd manager, keeps their records
// (package hostapi/store) so that a restarted daemon reports every job's
// real outcome, recovers them after a restart, and serves its metrics and
// the jobs' output logs.
//
// The Scheduler implements core.Core, all that the front ends (package
// hostapi/front: HTTP, SEQPACKET and D-Bus) see of it; neither package
// imports the other. Package hostapi/daemon wires them together: Run is
// the daemon's whole life in one call.
package scheduler
