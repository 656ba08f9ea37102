package pod

import (
	"fmt"
	"strconv"

	"github.com/unitrun/unitrun/internal/lazyregexp"
	"github.com/unitrun/unitrun/unit"
)

// An Exit is how one run of an app ended, as systemd tells ExecStopPost=.
type Exit struct {
	// Code is the exit status, 128+N for a process killed by signal N (as a
	// shell reports it), and 255 for a failed run that had no main process.
	Code int
	// Signal is the name of the signal that killed the process, as systemd
	// writes it ("TERM", "KILL", "RTMIN+3"), or "".
	Signal string
	// Result is systemd's $SERVICE_RESULT: "success", "exit-code",
	// "signal", "core-dump", "timeout", "watchdog", "oom-kill", ...
	Result string
	// Success is whether systemd counts the run as a success: it exited
	// with 0 or one of SuccessExitStatus= (from successExitCodes), or (an
	// app that is not an init app) was killed by one of the signals systemd
	// deems clean for a daemon (HUP, INT, TERM, PIPE), and nothing else went
	// wrong, such as a timeout.
	Success bool
}

// noProcessCode is the code of a failed run that had no main process.
const NoProcessCode = 255

var resultRE = lazyregexp.New(`^[a-z][a-z-]*$`)

// ExitFromEnv reads the variables systemd sets for ExecStopPost=:
// $SERVICE_RESULT, $EXIT_CODE ("exited", "killed" or "dumped") and
// $EXIT_STATUS (a number for "exited", a signal name otherwise, as in
// systemd.exec(5)). Both $EXIT_CODE and $EXIT_STATUS are empty when the run
// had no main process, such as when an ExecStartPre= command failed; the
// Exit then has code 0 if the result is "success" and 255 if not. Any other
// combination is an error.
func ExitFromEnv(serviceResult, exitCode, exitStatus string) (Exit, error) {
	if !resultRE.MatchString(serviceResult) {
		return Exit{}, fmt.Errorf("SERVICE_RESULT %q: must be a systemd service result such as success or exit-code", serviceResult)
	}
	e := Exit{Result: serviceResult, Success: serviceResult == "success"}
	switch exitCode {
	case "":
		if exitStatus != "" {
			return Exit{}, fmt.Errorf("EXIT_STATUS %q without EXIT_CODE", exitStatus)
		}
		if !e.Success {
			e.Code = NoProcessCode
		}
	case "exited":
		n, err := strconv.Atoi(exitStatus)
		if err != nil || n < 0 || n > 255 || strconv.Itoa(n) != exitStatus {
			return Exit{}, fmt.Errorf("EXIT_STATUS %q: must be an exit status 0..255 when EXIT_CODE is exited", exitStatus)
		}
		e.Code = n
	case "killed", "dumped":
		n, ok := unit.SignalNumber(exitStatus)
		if !ok {
			return Exit{}, fmt.Errorf("EXIT_STATUS %q: must be a signal name when EXIT_CODE is %s", exitStatus, exitCode)
		}
		e.Code, e.Signal = 128+n, unit.SignalName(n)
	default:
		return Exit{}, fmt.Errorf("EXIT_CODE %q: must be exited, killed or dumped", exitCode)
	}
	return e, nil
}
