// Package store keeps the host API daemon's job records and output logs
// durably in a state directory: one append-only log of every job's
// records (a checksummed JSON line per version, in the disk schema
// Record), indexed in memory, and an output log per job that the job's
// unit appends to. See Store for the layout and for what survives a crash
// or damage, and Open for the migrations from the layouts of versions 1
// and 2.
package store
