package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/internal/pty"
	"github.com/unitrun/unitrun/pod/podrun"
)

func newPodExecCmd(f *podFlags) *cobra.Command {
	var tty, interactive bool
	cmd := &cobra.Command{
		Use:                   "exec NAME APP [-t] [-i] -- COMMAND [ARG...]",
		DisableFlagsInUseLine: true,
		Example: `  unitrun pod exec web server -- cat /etc/os-release
  unitrun pod exec -ti web server -- sh`,
		Short: "Run a command in a running app's context: its cgroup, user, environment, root and namespaces",
		Long: `Run COMMAND in the context of APP, a running app of pod NAME: in the app's
cgroup (its limits hold the command and a stop of the app or of the pod
ends it), with the app's user, groups, environment, rootfs, working
directory, capabilities and noNewPrivileges, in its mount namespace and,
for an isolated pod, in the pod's namespaces. Its stdin (with -i; else
/dev/null), stdout and stderr are unitrun's, or with -t a pseudo-terminal,
the command's controlling terminal. unitrun exits with the command's
status: 126 if it cannot be executed, 127 if it does not exist, 128+N if
signal N ended it; 1 for a pod that does not exist, 2 for an app it does
not have, 125 for an app that is not running (docs/pods.md, Running a
command in an app).`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash < 0 && len(args) > 2:
				return usageError(errNoDash)
			case dash != 2 && len(args) >= 2 || len(args) < 2:
				return &exitError{code: exitUsage, err: errors.New("pod exec: give the pod, the app, then -- and the command: unitrun pod exec NAME APP -- COMMAND [ARG...]")}
			case len(args) == 2:
				return &exitError{code: exitUsage, err: errors.New("pod exec: no command after --: unitrun pod exec NAME APP -- COMMAND [ARG...]")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			name, app, argv := args[0], args[1], args[2:]
			dir, err := f.dir()
			if err != nil {
				return err
			}
			if err := podExecFailed((&podrun.Runner{StateDir: dir}).CheckExec(name, app)); err != nil {
				return err
			}
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				if tty {
					return podExecOnTerminal(r.ExecArgv(r.Manager, name, app, argv), interactive)
				}
				if !interactive {
					if err := stdinFromNull(); err != nil {
						return &exitError{code: exitFailed, err: err}
					}
				}
				return podExecFailed(r.Exec(cmd.Context(), name, app, argv))
			})
		},
	}
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "run the command on a pseudo-terminal, its controlling terminal, connected to unitrun's streams (unitrun's terminal, if any, in raw mode meanwhile with -i)")
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "pass unitrun's stdin to the command (without: /dev/null)")
	// "pod exec web server ls -l": the flag is the command's, which
	// lacks the -- before it.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if len(c.Flags().Args()) > 2 && c.ArgsLenAtDash() < 0 {
			return usageError(errNoDash)
		}
		return c.Parent().FlagErrorFunc()(c, err)
	})
	return cmd
}

// errNoDash is pod exec's error for a command line without the -- before
// the command.
var errNoDash = errors.New("pod exec: put -- between the app and the command: unitrun pod exec NAME APP -- COMMAND [ARG...]")

// podExecFailed gives the exit status of an error of pod exec: 2 for an
// app the pod does not have, 125 for an app that is not running, 126 or
// 127 for a command that could not be executed, and those of failed.
func podExecFailed(err error) error {
	var noApp *podrun.NoAppError
	var notRunning *podrun.NotRunningError
	var notExecuted *exec.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &noApp):
		return &exitError{code: exitUsage, err: err}
	case errors.As(err, &notRunning):
		return &exitError{code: exitFailed, err: err}
	case errors.As(err, &notExecuted):
		return exitFor(err, false)
	}
	return failed(err)
}

// stdinFromNull makes /dev/null the process's stdin.
func stdinFromNull() error {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	return syscall.Dup3(int(null.Fd()), 0, 0)
}

// podExecOnTerminal runs argv, "unitrun pod exec" without -t, on a new
// pseudo-terminal, its controlling terminal in a session it leads,
// which it passes on to the command it becomes; it copies the terminal's
// output to stdout and, if interactive, stdin to the terminal, and exits
// with the command's status (128+N for a signal N).
func podExecOnTerminal(argv []string, interactive bool) error {
	p, err := pty.Open()
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("--tty: %w", err)}
	}
	c := exec.Command(argv[0], argv[1:]...)
	if err := p.Run(c, os.Stdin, os.Stdout, interactive); c.ProcessState == nil {
		return &exitError{code: exitFailed, err: err}
	}
	ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		return &exitError{code: 128 + int(ws.Signal())}
	case ws.ExitStatus() != 0:
		return &exitError{code: ws.ExitStatus()}
	}
	return nil
}
