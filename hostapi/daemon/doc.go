// Package daemon is the unitrun host API daemon's whole life in one call,
// Run: it locks the state dir against a second daemon, reads the ops
// config (package hostapi/config), opens the job store, takes its sockets
// (Listen: systemd's, or its own), makes the scheduler (package hostapi/scheduler)
// and re-attaches it to the jobs an earlier daemon left, serves the front
// ends (package hostapi/front) on it, prunes old records, tells systemd
// how it does (sd_notify), reloads the config on SIGHUP and shuts down.
// `unitrun daemon` parses its flags and calls Run.
package daemon
