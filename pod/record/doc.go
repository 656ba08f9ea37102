// Package record records the exits of a pod's apps: the files of a pod's
// state that its hooks write (each app's record and status file, the
// stopping mark, the lock, the start error of a run, the pod's policies)
// with their atomic writes and safe reads, an app's exit as systemd tells
// ExecStopPost= ([Exit], [HookEnv]), the policies that decide what
// happens when an app exits ([Decide]), the recording of an exit
// that applies them ([RecordExit]), and the check that keeps a hook to
// the unit it belongs to ([CheckInUnit]).
//
// It links the standard library alone (and unitrun's atomicfile and
// unit/exit, which do too): the pods' exit hook, cmd/unitrun-hook, runs it
// at every exit of every app, and starts in a fraction of the time that a
// program linking package pod (YAML, the unit graph, D-Bus) takes.
package record
