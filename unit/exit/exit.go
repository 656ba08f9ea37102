// Package exit tells how a process ended, as systemd reports it, and why
// a command could not be executed ([CannotExecute], [NotExecuted]), and
// names signals as systemd does. It links the standard library alone, so
// that the pods' small hook binary, which starts at every run and exit of
// every app, can use it without package unit or package job.
package exit

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strconv"
	"syscall"
)

// An Exit is how the main process of one run of a service ended. It is
// unitrun's one account of a process's end: job.Status holds one, and
// every face that writes JSON (run, start and wait --json, the daemon's
// records and its D-Bus Finished signal, pod statuses, the node's
// container statuses) writes it with [Exit.JSON]. [ExitFromMain] reads it
// from the unit's properties, [ExitFromEnv] from what systemd tells an
// ExecStopPost= command, [ExecFailed] from the error of an exec, and
// [ParseExit] from its JSON.
type Exit struct {
	// Ran reports whether a main process ran and ended. It is false for
	// a run that had none (a start job that failed or was canceled before
	// systemd forked one, an ExecStartPre= that failed); ExitCode and
	// Signal are then 0.
	Ran bool
	// ExitCode is the status a shell reports for the process ($?): its
	// exit status if it exited, 128+N if signal N killed it, and for a
	// command that could not be executed 127 if it or its #! interpreter
	// does not exist, else 126 (exec format error, permission denied).
	ExitCode int
	// Signal is the signal that killed the process, or 0.
	Signal syscall.Signal
	// CoreDumped reports whether the process dumped core as it died.
	CoreDumped bool
	// Result is systemd's word for how the run went, the service's
	// Result ($SERVICE_RESULT): success, exit-code, signal, core-dump,
	// timeout, watchdog, oom-kill, resources, ...; "" if not known.
	Result string
	// ExecError is why the command could not be executed (systemd's
	// exit status 203/EXEC), nil if it was: an error wrapping the errno
	// (syscall.ENOEXEC, ENOENT, EACCES) where that is known, and
	// ErrExecUnknown where it is not.
	ExecError error
}

// Exit statuses of a command that could not be executed, as a shell
// gives them (and unitrun run exits with).
const (
	ExitCannotExecute = 126 // it exists but cannot be executed
	ExitNotFound      = 127 // it, or its #! interpreter, does not exist
)

// ErrExecUnknown is the ExecError of a command that systemd could not
// execute (exit status 203/EXEC) for a reason not known to unitrun: systemd
// writes the reason to the journal only.
var ErrExecUnknown = errors.New("systemd exit status 203/EXEC, the unit's journal says why")

// exitExec is systemd's exit status for a command it could not execute
// (EXIT_EXEC in systemd.exec(5)).
const exitExec = 203

// Values of ExecMainCode, the si_code of waitid(2), which $EXIT_CODE
// names "exited", "killed" and "dumped".
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// ExitFromMain returns the Exit that a service's properties ExecMainCode,
// ExecMainStatus and Result describe. An ExecMainCode of 0 means no main
// process ran. systemd's own 203/EXEC is a command it could not execute,
// for a reason the properties do not say (ErrExecUnknown, ExitCode 126):
// [Exit.WithExecError] adds what the caller knows.
func ExitFromMain(code, status int32, result string) Exit {
	switch code {
	case cldExited:
		return exited(int(status), result)
	case cldKilled, cldDumped:
		return killed(syscall.Signal(status), code == cldDumped, result)
	}
	return Exit{Result: result}
}

func exited(status int, result string) Exit {
	if status == exitExec {
		return Exit{Ran: true, ExitCode: ExitCannotExecute, Result: result, ExecError: ErrExecUnknown}
	}
	return Exit{Ran: true, ExitCode: status, Result: result}
}

func killed(sig syscall.Signal, dumped bool, result string) Exit {
	return Exit{Ran: true, ExitCode: 128 + int(sig), Signal: sig, CoreDumped: dumped, Result: result}
}

// ExitFromEnv returns the Exit that the variables systemd sets for
// ExecStopPost= describe: $SERVICE_RESULT, $EXIT_CODE ("exited", "killed"
// or "dumped") and $EXIT_STATUS (a number for "exited", a signal name
// otherwise, as in systemd.exec(5)). Both $EXIT_CODE and $EXIT_STATUS are
// empty when the run had no main process. Any other combination is an
// error naming the variable.
func ExitFromEnv(serviceResult, exitCode, exitStatus string) (Exit, error) {
	if !ValidResult(serviceResult) {
		return Exit{}, fmt.Errorf("SERVICE_RESULT %q: must be a systemd service result such as success or exit-code", serviceResult)
	}
	switch exitCode {
	case "":
		if exitStatus != "" {
			return Exit{}, fmt.Errorf("EXIT_STATUS %q without EXIT_CODE", exitStatus)
		}
		return Exit{Result: serviceResult}, nil
	case "exited":
		n, err := strconv.Atoi(exitStatus)
		if err != nil || n < 0 || n > 255 || strconv.Itoa(n) != exitStatus {
			return Exit{}, fmt.Errorf("EXIT_STATUS %q: must be an exit status 0..255 when EXIT_CODE is exited", exitStatus)
		}
		return exited(n, serviceResult), nil
	case "killed", "dumped":
		n, ok := SignalNumber(exitStatus)
		if !ok {
			return Exit{}, fmt.Errorf("EXIT_STATUS %q: must be a signal name when EXIT_CODE is %s", exitStatus, exitCode)
		}
		return killed(syscall.Signal(n), exitCode == "dumped", serviceResult), nil
	}
	return Exit{}, fmt.Errorf("EXIT_CODE %q: must be exited, killed or dumped", exitCode)
}

// ValidResult reports whether s has the form of a service result, as
// systemd writes them: lower-case words joined by dashes.
func ValidResult(s string) bool {
	for i, c := range s {
		if !('a' <= c && c <= 'z' || c == '-' && i > 0) {
			return false
		}
	}
	return s != ""
}

// ExecFailed returns the Exit of a command that could not be executed
// because of err (the error of an execve, or of a look-up before it): 127
// if the command or its #! interpreter does not exist (err wraps
// fs.ErrNotExist, ENOTDIR or exec.ErrNotFound), else 126, as a shell
// gives them. Its Result is exit-code, as systemd gives for a command it
// could not execute (203/EXEC), so that every face tells such a command
// alike whether systemd or unitrun found it could not be executed.
func ExecFailed(err error) Exit {
	code := ExitCannotExecute
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, exec.ErrNotFound) {
		code = ExitNotFound
	}
	return Exit{Ran: true, ExitCode: code, Result: "exit-code", ExecError: err}
}

// WithExecError returns e, a command that systemd could not execute, with
// err as the reason (its ExitCode following ExecFailed); e itself if it is
// not such an exit or err is nil.
func (e Exit) WithExecError(err error) Exit {
	if e.ExecError == nil || err == nil {
		return e
	}
	x := ExecFailed(err)
	x.Result = e.Result
	return x
}

// JSON returns the exit as every JSON face of unitrun writes it, the
// fields exit_code and signal: exitCode is ExitCode (the shell's status,
// 128+N for signal N) whenever a main process ran, nil if none did;
// signal is the signal's name as systemd writes it ("KILL", "RTMIN+3":
// SignalName), "" if none killed it.
func (e Exit) JSON() (exitCode *int, signal string) {
	if !e.Ran {
		return nil, ""
	}
	code := e.ExitCode
	if e.Signal != 0 {
		signal = SignalName(int(e.Signal))
	}
	return &code, signal
}

// ParseExit reads an exit as [Exit.JSON] writes it, with its result. It
// also reads the form unitrun wrote before exit_code was set for a
// signal (exit_code null, signal "KILL"), as old job records hold it.
// Whether the process dumped core is read from result ("core-dump"); why
// an exec failed is not in the JSON and stays nil.
func ParseExit(exitCode *int, signal, result string) Exit {
	if n, ok := SignalNumber(signal); ok {
		return killed(syscall.Signal(n), result == "core-dump", result)
	}
	if exitCode == nil {
		return Exit{Result: result}
	}
	return Exit{Ran: true, ExitCode: *exitCode, Result: result}
}

// String describes the exit as unitrun's messages do: [Exit.How],
// followed by systemd's result when it tells more than that ("(result
// timeout)").
func (e Exit) String() string {
	switch e.Result {
	case "", "success", "exit-code", "signal", "core-dump":
		return e.How()
	}
	return e.How() + " (result " + e.Result + ")"
}

// How describes how the process ended, without systemd's result: "exit
// status 3", "signal: SIGSEGV (core dumped)", "cannot execute: exec
// format error (exit status 126)", "no process ran". A message that tells
// the result on its own (unitrun's summary line) uses it.
func (e Exit) How() string {
	switch {
	case !e.Ran:
		return "no process ran"
	case e.ExecError != nil:
		return fmt.Sprintf("cannot execute: %v (exit status %d)", e.ExecError, e.ExitCode)
	case e.Signal != 0 && e.CoreDumped:
		return "signal: SIG" + SignalName(int(e.Signal)) + " (core dumped)"
	case e.Signal != 0:
		return "signal: SIG" + SignalName(int(e.Signal))
	}
	return "exit status " + strconv.Itoa(e.ExitCode)
}
