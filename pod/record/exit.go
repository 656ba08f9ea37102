package record

import (
	"github.com/unitrun/unitrun/unit/exit"
)

// An Exit is how one run of an app ended, as systemd tells ExecStopPost=
// (exit.ExitFromEnv), and whether the pod counts it a success.
type Exit struct {
	exit.Exit
	// Success is whether the run counts as a success: systemd's result
	// is "success" (it exited with 0 or one of SuccessExitStatus=, from
	// successExitCodes, or, for an app that is not an init app, was
	// killed by one of the signals systemd deems clean for a daemon: HUP,
	// INT, TERM, PIPE), and nothing else went wrong, such as a timeout or
	// a command that could not be executed.
	Success bool
}

// NoProcessCode is the exit code an app's record holds for a failed run
// that had no main process, such as one whose ExecStartPre= failed.
const NoProcessCode = 255

// Code is the exit code of the app's record for the exit: the process's
// (exit.Exit's ExitCode, 128+N for signal N), or for a run that had no
// main process 0 if it succeeded and NoProcessCode if not.
func (e Exit) Code() int {
	switch {
	case e.Ran:
		return e.ExitCode
	case e.Success:
		return 0
	}
	return NoProcessCode
}
