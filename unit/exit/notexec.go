package exit

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// CannotExecute returns why execve(2) refuses path, a command that could
// not be executed, as far as the file tells: a missing file or #!
// interpreter (ENOENT; an *InterpreterError for the interpreter), one not
// executable (EACCES), or one in no format the kernel runs (ENOEXEC:
// neither a valid ELF file nor a #! script); nil if the file looks
// executable. It is the reason every face gives for such a command: run's
// and start's (systemd could not execute it) and a pod app's.
func CannotExecute(path string) error {
	f, err := os.Open(path)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return fmt.Errorf("%s: %w", path, errno)
		}
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: %w", path, syscall.EACCES)
	}
	head := make([]byte, 256) // the kernel's BINPRM_BUF_SIZE
	n, _ := io.ReadFull(f, head)
	if line, ok := bytes.CutPrefix(head[:n], []byte("#!")); ok {
		line, _, _ = bytes.Cut(line, []byte("\n"))
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			return fmt.Errorf("%s: %w", path, syscall.ENOEXEC)
		}
		interp := string(fields[0])
		if e := CannotExecute(interp); e != nil {
			return &InterpreterError{Script: path, Err: e}
		}
		return nil
	}
	if _, err := elf.NewFile(f); err != nil {
		return fmt.Errorf("%s: %w", path, syscall.ENOEXEC)
	}
	return nil
}

// An InterpreterError is why the #! script Script cannot be executed: its
// interpreter cannot be, for the reason Err, which names the interpreter.
type InterpreterError struct {
	Script string
	Err    error
}

func (e *InterpreterError) Error() string { return e.Script + ": interpreter " + e.Err.Error() }
func (e *InterpreterError) Unwrap() error { return e.Err }

// NotExecuted returns what unitrun says, as a shell does, of a command
// that was found missing or not executable (err wraps an *exec.Error):
// "/x/cmd: command not found" for one that ends in exit status 127
// ([ExecFailed]), else "/x/cmd: cannot execute: permission denied"; nil
// for any other err. A #! script whose interpreter is missing (an
// *InterpreterError) is told as the run systemd could not execute tells
// it ([Exit.String]): "cannot execute: /x/script: interpreter
// /x/sh: no such file or directory (exit status 127)". Every face that
// tells such a command (run's message and --json, a daemon job's record,
// a pod app's log) tells it so.
func NotExecuted(err error) error {
	var xe *exec.Error
	if !errors.As(err, &xe) {
		return nil
	}
	if ie := (*InterpreterError)(nil); errors.As(xe.Err, &ie) {
		return errors.New(ExecFailed(ie).String())
	}
	if ExecFailed(xe.Err).ExitCode == ExitNotFound {
		return fmt.Errorf("%s: command not found", xe.Name)
	}
	why := xe.Err
	if pe := (*fs.PathError)(nil); errors.As(why, &pe) {
		why = pe.Err // "stat /opt/x/agent: permission denied" names the command again, and the call
	}
	return fmt.Errorf("%s: cannot execute: %w", xe.Name, why)
}
