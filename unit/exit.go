package unit

import (
	"github.com/unitrun/unitrun/unit/exit"
)

// How a service's main process ended, and the names of signals, live in
// package unit/exit, which links the standard library alone for the pods'
// exit hook; package unit gives them under their names of old.

// An Exit is how the main process of one run of a service ended: see
// [exit.Exit].
type Exit = exit.Exit

// Exit statuses of a command that could not be executed, as a shell
// gives them.
const (
	ExitCannotExecute = exit.ExitCannotExecute
	ExitNotFound      = exit.ExitNotFound
)

// ErrExecUnknown is [exit.ErrExecUnknown].
var ErrExecUnknown = exit.ErrExecUnknown

// The conversions of [exit.Exit], and the signal names.
var (
	ExitFromMain = exit.ExitFromMain
	ExitFromEnv  = exit.ExitFromEnv
	ValidResult  = exit.ValidResult
	ExecFailed   = exit.ExecFailed
	ParseExit    = exit.ParseExit
	SignalName   = exit.SignalName
	SignalNumber = exit.SignalNumber
)
