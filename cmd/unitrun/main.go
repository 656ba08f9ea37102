// Command unitrun runs host work as systemd units and tells the caller
// exactly what happened. See "unitrun --help".
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit/exit"
)

// Exit statuses of unitrun itself; a command's own status passes through.
const (
	exitHeld       = 1                      // daemon: another process holds its state dir or answers on its socket
	exitUsage      = 2                      // bad flags or arguments
	exitRunFailed  = 1                      // run, start, wait: systemd counts the run failed, though its command exited 0
	exitFailed     = 125                    // unitrun could not do what was asked (no manager, job failed)
	exitCannotExec = exit.ExitCannotExecute // 126: the command exists but cannot be executed
	exitNotFound   = exit.ExitNotFound      // 127: the command (or its #! interpreter) was not found
)

// exitStatuses is the table of the exit statuses of run, start and wait:
// their --help and man pages show it, and README.md has it word for word
// (TestExitStatusesInReadme).
const exitStatuses = `| status | meaning |
| --- | --- |
| the command's own | it exited with that code |
| 0 | also for an exit status (or a signal) that the unit's ` + "`SuccessExitStatus=`" + ` lists: systemd counts the run a success (the summary line and ` + "`--json`" + `'s ` + "`exit_code`" + ` tell the status) |
| 1 | the command exited 0, but systemd counts the run failed: its result (` + "`timeout`" + ` of ` + "`RuntimeMaxSec=`" + `, ` + "`exit-code`" + ` of an ` + "`ExecStopPost=`" + ` that failed, ...) is printed; ` + "`systemd-run --wait`" + ` exits 1 too |
| 128+N | a signal N ended it (SIGTERM counts, though systemd calls it clean, unless ` + "`SuccessExitStatus=`" + ` names it), or interrupted unitrun (130 for Ctrl-C), which stopped the run it made; a run it only waited for goes on |
| 2 | bad flags or arguments |
| 125 | unitrun failed: no manager, or the start job failed (the job result is printed; also where the command ran and exited 0, as after a start timeout) |
| 126 | the command exists but cannot be executed (exec format error, permission denied: found before anything starts, or by systemd's 203/EXEC) |
| 127 | the command, or its ` + "`#!`" + ` interpreter, was not found |
`

// addManCommand adds the hidden "unitrun man DIR" to a build tagged
// unitrun_man (manpage.go); it is nil in the shipped binary.
var addManCommand func(root *cobra.Command)

// exitError carries the status unitrun exits with.
type exitError struct {
	code int
	err  error // printed unless nil
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// globals are the flags every command takes.
type globals struct {
	manager     string
	embeddedDir string
}

func (g *globals) open(ctx context.Context) (*manager.Conn, error) {
	return manager.Open(ctx, g.manager, manager.Options{EmbeddedDir: g.embeddedDir})
}

// openToRun is open for run, which has the manager keep its unit for it
// (job.Cmd): it reaches a user manager, the embedded one too, through its
// session bus where the manager is on it, so that one connection serves
// the run (manager.Options.OverBus).
func (g *globals) openToRun(ctx context.Context) (*manager.Conn, error) {
	return manager.Open(ctx, g.manager, manager.Options{EmbeddedDir: g.embeddedDir, OverBus: true})
}

// withManager reaches the manager, runs do on it and closes the
// connection; a manager that cannot be reached exits 125.
func (g *globals) withManager(ctx context.Context, do func(mgr *manager.Conn) error) error {
	mgr, err := g.open(ctx)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	defer mgr.Close()
	return do(mgr)
}

// interrupt is the cause of a command's context that a signal canceled.
type interrupt struct{ sig syscall.Signal }

func (i interrupt) Error() string { return "interrupted by " + job.SignalName(i.sig) }

// interruptedBy returns the signal that canceled ctx, if one did.
func interruptedBy(ctx context.Context) (syscall.Signal, bool) {
	var i interrupt
	if errors.As(context.Cause(ctx), &i) {
		return i.sig, true
	}
	return 0, false
}

// signalled reports whether err is the cancellation of ctx by a signal,
// and returns that signal and err told with it (see interrupted).
func signalled(ctx context.Context, err error) (syscall.Signal, error, bool) {
	sig, ok := interruptedBy(ctx)
	if !ok || !errors.Is(err, context.Canceled) {
		return 0, err, false
	}
	return sig, interrupted(err, context.Cause(ctx)), true
}

// interrupted tells err, which ends in the "context canceled" of a context
// that a signal canceled, with that signal instead ("stopped waiting for
// x.service, which goes on: interrupted by SIGINT").
func interrupted(err, cause error) error {
	msg, ok := strings.CutSuffix(err.Error(), context.Canceled.Error())
	if !ok || msg == "" {
		return cause
	}
	return fmt.Errorf("%s%w", msg, cause)
}

// interruptSignals are the signals that interrupt unitrun: Ctrl-C, a
// stop, and the hangup of a terminal that closed. Each stops what run,
// start and pod run started (op call cancels its job with
// --cancel-on-interrupt; wait only stops waiting), and unitrun exits
// 128+N; none kills unitrun outright, which would leave the unit running.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

func main() {
	root := newRoot()
	// The first signal of stopSignals cancels the command's context, with
	// the signal as its cause; later ones are caught and dropped.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	if stop := stopSignals(root, os.Args[1:]); len(stop) > 0 {
		signal.Notify(sigs, stop...)
		go func() { cancel(interrupt{(<-sigs).(syscall.Signal)}) }()
	}
	stdout := &countingWriter{f: os.Stdout}
	root.SetOut(stdout)
	cmd, err := root.ExecuteContextC(ctx)
	signal.Stop(sigs)
	if err == nil {
		return
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// Bad input is an *exitError with exitUsage (see applyContract):
		// anything else is unitrun's own failure.
		ee = &exitError{code: exitFailed, err: err}
	}
	// A command that a signal cut short did not fail: it exits 128+N.
	if sig, told, ok := signalled(ctx, ee.err); ok && ee.code == exitFailed {
		ee = &exitError{code: 128 + int(sig), err: told}
	}
	if ee.err != nil {
		if stdout.n == 0 && wantsJSON(cmd, ee.err, os.Args[1:]) {
			// stdout holds one JSON value whatever happened.
			printLine(stdout, struct {
				Error string `json:"error"`
			}{ee.err.Error()})
		}
		fmt.Fprintln(os.Stderr, "unitrun:", ee.err)
	}
	os.Exit(ee.code)
}

// stopSignals returns the signals that interrupt the command of root that
// args name: interruptSignals, but SIGHUP for "daemon", which reads its
// config again on it, and none for the start hook ("pod unit-hook
// start"), which a pod's app service
// runs as its main process and which becomes the app's command: a stop
// signal that comes before that must end it as it would end the command,
// so it keeps the default action (a handler would swallow the signal, and
// the command, started after it, would run on until the stop timeout's
// SIGKILL). "pod exec" keeps it too, for the same reason: it becomes the
// user's command, or, with a terminal, is its terminal, whose end hangs
// the command up.
func stopSignals(root *cobra.Command, args []string) []os.Signal {
	c, _, err := root.Find(args)
	switch {
	case err != nil:
		return interruptSignals
	case c.Name() == record.HookStart && c.HasParent() && c.Parent().Name() == record.HookCommand,
		c.Name() == "exec" && c.HasParent() && c.Parent().Name() == "pod":
		return nil
	case c.Name() == "daemon":
		return slices.DeleteFunc(slices.Clone(interruptSignals), func(s os.Signal) bool { return s == syscall.SIGHUP })
	}
	return interruptSignals
}

// countingWriter counts the bytes written to f. Its Fd lets newTerm see
// whether f is a terminal.
type countingWriter struct {
	f *os.File
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	c.n += n
	return n, err
}

func (c *countingWriter) Fd() uintptr { return c.f.Fd() }

// wantsJSON reports whether cmd, which failed with err, was given --json:
// its value, or, when the flags could not be parsed (so that those after
// the one at fault were not read), a "--json" among args before "--".
func wantsJSON(cmd *cobra.Command, err error, args []string) bool {
	f := cmd.Flags().Lookup("json")
	switch {
	case f == nil:
		return false
	case f.Value.String() == "true":
		return true
	case !errors.As(err, new(badFlags)):
		return false
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true":
			return true
		}
	}
	return false
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "unitrun",
		Short: "Run host work as systemd units and report exactly what happened",
		Long: `unitrun runs a command as a transient systemd unit, or starts an existing unit,
and waits race-free for the job, the exit status and the output.

Where no systemd manager is reachable, unitrun boots an embedded one and
reuses it (see "unitrun manager").

Listings are aligned tables with a header on a terminal, their states
colored unless NO_COLOR is set or TERM=dumb, and plain tab-separated lines
with no header and no escapes when piped: stable for scripts. --json prints
one JSON value on stdout instead. Progress and summaries go to stderr.
See docs/cli.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.manager, "manager", "", "manager to use: auto, system, user, private:PATH or embedded (default $"+manager.EnvManager+", else auto)")
	root.PersistentFlags().StringVar(&g.embeddedDir, "embedded-dir", "", "runtime directory of the embedded manager (default $"+manager.EnvEmbeddedDir+", else "+manager.DefaultEmbeddedDir+")")
	run, start, wait := newRunCmd(g), newStartCmd(g), newWaitCmd(g)
	for _, c := range []*cobra.Command{run, start, wait} {
		c.Long += "\n\nExit statuses:\n\n" + exitStatuses
	}
	root.AddCommand(run, start, wait, newManagerCmd(g))
	root.AddCommand(newPodCmd(g))
	root.AddCommand(newImageCmd())
	root.AddCommand(newDaemonCmd(g), newOpCmd(g), newInjectCmd(g))
	root.AddCommand(newInstallCmd(g), newUninstallCmd(g), newVersionCmd())
	if addManCommand != nil {
		addManCommand(root)
	}
	setVersion(root)
	applyContract(root)
	return root
}
