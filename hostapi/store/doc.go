// Package store keeps the host API daemon's job records and output logs
// durably in a state directory: a directory per job, holding its record
// (a JSON line per version, in the disk schema Record) and the output log
// that the job's unit appends to. See Store for the layout and for what
// survives a crash.
package store
