// Package inject copies a binary onto the host under a content-addressed
// name, so that an agent running in a container can run its own, same
// version code on the host as a transient unit (by default in /run/bin, as
// "<name>-<first 16 hex digits of its SHA-256>").
//
// Installs are atomic and idempotent: a reader sees no file or the whole,
// verified file, and installing the same content twice yields the same
// path. Variant and Choose pick, among builds for several host OS releases,
// the one whose os-release fields fit the host (ParseVariant reads one
// written as PATH:FIELD=PATTERN,...). Self installs the running
// executable and the companion file it goes with, such as unitrun's exit
// hook, beside the copy. GC removes the installed files that no service
// runs, as InUse reads them from a manager, a binary and its companions
// together.
package inject
