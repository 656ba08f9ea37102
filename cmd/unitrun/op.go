package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/unit/exit"
)

type opFlags struct {
	socket string
	asJSON bool
}

func (f *opFlags) client() *client.Client { return client.New(f.socket) }

// waitingClient is client for a command that waits for a job (op wait,
// op logs -f): while no daemon answers it says so, once, on cmd's stderr
// (client.Client.NotReached), and goes on waiting.
func (f *opFlags) waitingClient(cmd *cobra.Command) *client.Client {
	c := f.client()
	c.NotReached = func() {
		fmt.Fprintf(cmd.ErrOrStderr(), "unitrun: no daemon answers at %s yet; waiting for it (Ctrl-C to stop)\n", f.socket)
	}
	return c
}

func newOpCmd(g *globals) *cobra.Command {
	f := &opFlags{}
	cmd := &cobra.Command{
		Use:   "op",
		Short: "Call the host operations of a unitrun daemon and follow their jobs",
	}
	def := client.DefaultSocket
	if s := os.Getenv("UNITRUN_SOCKET"); s != "" {
		def = s
	}
	cmd.PersistentFlags().StringVar(&f.socket, "socket", def, "the daemon's HTTP socket; $UNITRUN_SOCKET sets the default")
	cmd.PersistentFlags().BoolVar(&f.asJSON, "json", false, "print the listing or the job's record as JSON on stdout (see docs/cli.md)")
	cmd.AddCommand(newOpListCmd(f), newOpCallCmd(g, f), newOpJobCmd(f, "status", "Print a job's record", false),
		newOpJobCmd(f, "wait", "Wait for a job to end, say how on stderr (--json: its record on stdout); exit with its status", true),
		newOpLogsCmd(f), newOpJobsCmd(f), newOpCancelCmd(f))
	return cmd
}

func newOpListCmd(f *opFlags) *cobra.Command {
	return &cobra.Command{
		Use: "list", Short: "List the daemon's ops", Args: cobra.NoArgs,
		Long: `List the daemon's ops. Piped, each op is one tab-separated line with no
header: name, allowed (true/false), args (min-max), exclusive, unit.`,
		Example: "  unitrun op list\n  unitrun op list --json --socket /run/unitrun/api.sock",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ops, err := f.client().Ops(cmd.Context())
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if f.asJSON {
				return printJSON(cmd.OutOrStdout(), ops)
			}
			var rows [][]string
			for _, op := range ops {
				rows = append(rows, []string{op.Name, fmt.Sprint(op.Allowed), fmt.Sprintf("%d-%d", op.ArgsMin, op.ArgsMax), fmt.Sprint(op.Exclusive), op.Unit})
			}
			return newTerm(cmd.OutOrStdout()).table([]string{"NAME", "ALLOWED", "ARGS", "EXCLUSIVE", "UNIT"}, rows, -1)
		},
	}
}

func newOpCallCmd(g *globals, f *opFlags) *cobra.Command {
	var noWait, rebootIfNeeded, quiet, cancelOnInterrupt bool
	var key string
	cmd := &cobra.Command{
		Use:   "call NAME [ARGS...]",
		Short: "Call an op, stream its output and exit with its exit status",
		Long: `Call the op NAME with ARGS, stream the job's output to stdout until it
ends, print a summary on stderr (or the record as JSON on stdout with
--json) and exit with the op's exit status: 0, its exit code, 128+N for a
signal N, or 125 when it failed otherwise. On stderr it shows that the job
is queued and started and, on a terminal, how long it has been waiting;
-q shows neither, nor the summary. With --reboot-if-needed, an op
that reports reboot_required makes unitrun start reboot.target through the
manager; the daemon itself never reboots.

A "--" right after NAME ends unitrun's flags and is not passed to the op.

Ctrl-C, SIGTERM or SIGHUP stops following the job, not the job: unitrun says that
it goes on, with its id for "unitrun op wait" and "unitrun op cancel", and
exits 128+N for the signal N. With --cancel-on-interrupt, or for an op
whose on_disconnect is "stop", unitrun cancels the job instead, prints
its final record and exits 128+N too, as "unitrun run" does when it stops
its unit. The call waits on its own connection until the job ends, so the
daemon cancels a job of an on_disconnect "stop" op whenever unitrun goes
away, SIGKILL included.`,
		Example: `  unitrun op call rebase quay.io/example/os@sha256:0123...
  unitrun op call --reboot-if-needed rebase quay.io/example/os:stable
  unitrun op call --no-wait pivot quay.io/example/os:stable
  unitrun op call --key rebase-2026-12-02 rebase quay.io/example/os:stable`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if key != "" && !api.ValidKey(key) {
				return &exitError{code: exitUsage, err: fmt.Errorf("--key %q: must match %s", key, api.KeyPattern)}
			}
			ctx := cmd.Context()
			c := f.client()
			if len(args) > 1 && args[1] == "--" {
				args = slices.Delete(args, 1, 2)
			}
			if noWait {
				id, err := c.CallKeyed(ctx, args[0], args[1:], key)
				switch {
				case err != nil:
					return callRefused(err)
				case f.asJSON:
					return printJSON(cmd.OutOrStdout(), map[string]string{"id": id})
				}
				fmt.Fprintln(cmd.OutOrStdout(), id)
				return nil
			}
			// The call's connection stays open until the job ends, so
			// that the daemon applies the op's on_disconnect however
			// this process goes, SIGKILL included. Once the call is
			// accepted, an interrupt leaves it open until op call has
			// canceled the job itself (interruptedCall), which the
			// record then says, rather than a disconnect; it closes as
			// op call returns.
			callCtx, endCall := context.WithCancel(context.WithoutCancel(ctx))
			defer endCall()
			interruptsCall := context.AfterFunc(ctx, endCall)
			call, err := c.CallWaiting(callCtx, args[0], args[1:], key)
			interruptsCall()
			if err != nil {
				return callRefused(err)
			}
			rec, err := follow(cmd, c, call, args[0], f.asJSON, quiet)
			if err != nil {
				if sig, ok := interruptedBy(ctx); ok {
					return interruptedCall(cmd, f, c, call.ID, args[0], sig, cancelOnInterrupt)
				}
				return err
			}
			if !quiet || f.asJSON {
				if err := printRecord(cmd, f, rec); err != nil {
					return err
				}
			}
			if rec.RebootRequired && rebootIfNeeded {
				if err := reboot(ctx, g); err != nil {
					return &exitError{code: exitFailed, err: err}
				}
			}
			return recordExit(rec)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "print the job id and return once the daemon accepted the call")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key: a repeated call with the same key gets the job the first one started, and a lost answer is asked for again")
	cmd.Flags().BoolVar(&rebootIfNeeded, "reboot-if-needed", false, "start reboot.target when the op reports reboot_required")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "show no progress and no summary line")
	cmd.Flags().BoolVar(&cancelOnInterrupt, "cancel-on-interrupt", false, "cancel the job on Ctrl-C, SIGTERM or SIGHUP instead of leaving it running")
	return cmd
}

// exitNoJob is the exit status of an op command given a job ID that the
// daemon does not know (or does not show this caller), as exitNoPod is
// for pods.
const exitNoJob = 1

// jobFailed wraps an error of an op command about job ID in exit status
// exitNoJob for a job the daemon does not know, else 125.
func jobFailed(err error) error {
	var refused *api.Error
	if errors.As(err, &refused) && refused.Code == api.CodeNotFound {
		return &exitError{code: exitNoJob, err: err}
	}
	return &exitError{code: exitFailed, err: err}
}

// callRefused is the exit of an op call that the daemon did not take: 2,
// as for any command, for what was typed wrong (an op of no such name,
// args that break the op's rule), 125 otherwise.
func callRefused(err error) error {
	var refused *api.Error
	if errors.As(err, &refused) && (refused.Code == api.CodeUnknownOp || refused.Code == api.CodeBadArgs) {
		return &exitError{code: exitUsage, err: err}
	}
	return &exitError{code: exitFailed, err: err}
}

// interruptedCall ends an "op call" that signal sig interrupted while it
// followed job id of op: it cancels the job when asked to, or when the op
// cancels a job whose caller goes away (on_disconnect "stop"), and exits
// 128+sig, saying whether it canceled the job or the job goes on. A daemon
// that is restarting is waited for, as op call waits for it while it
// follows the job; one that does not answer within 30 seconds makes it
// exit 125, saying that the job may go on.
func interruptedCall(cmd *cobra.Command, f *opFlags, c *client.Client, id, op string, sig syscall.Signal, cancel bool) error {
	ctx, stop := context.WithTimeout(context.WithoutCancel(cmd.Context()), 30*time.Second)
	defer stop()
	by := interrupt{sig}
	if !cancel {
		var err error
		if cancel, err = opStopsOnDisconnect(ctx, c, op); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("%v: job %s (op %s) may go on: the daemon did not say whether its op stops on disconnect: %w", by, id, op, err)}
		}
	}
	if !cancel {
		return &exitError{code: 128 + int(sig), err: fmt.Errorf("%v: job %s (op %s) goes on; follow it with \"unitrun op wait %s\" or stop it with \"unitrun op cancel %s\"", by, id, op, id, id)}
	}
	var rec *api.Record
	err := client.Retry(ctx, func() (err error) {
		rec, err = c.Cancel(ctx, id)
		return err
	})
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("%v: cancel job %s (op %s): %w", by, id, op, err)}
	}
	if err := printRecord(cmd, f, rec); err != nil {
		return err
	}
	if rec.State != api.StateCanceled {
		return &exitError{code: 128 + int(sig), err: fmt.Errorf("%v: job %s (op %s) ended before it could be canceled: %s", by, id, op, rec.State)}
	}
	return &exitError{code: 128 + int(sig), err: fmt.Errorf("%v: job %s (op %s) canceled", by, id, op)}
}

// opStopsOnDisconnect reports whether the daemon cancels a job of op once
// its waiting caller goes away (on_disconnect "stop"), asking the daemon
// again until it answers or ctx ends.
func opStopsOnDisconnect(ctx context.Context, c *client.Client, op string) (bool, error) {
	var ops []api.OpInfo
	err := client.Retry(ctx, func() (err error) {
		ops, err = c.Ops(ctx)
		return err
	})
	if err != nil {
		return false, err
	}
	i := slices.IndexFunc(ops, func(o api.OpInfo) bool { return o.Name == op })
	return i >= 0 && ops[i].OnDisconnect == "stop", nil
}

// reboot starts reboot.target on the manager.
func reboot(ctx context.Context, g *globals) error {
	mgr, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer mgr.Close()
	_, err = mgr.StartUnit(ctx, "reboot.target", "replace-irreversibly")
	if err != nil {
		return fmt.Errorf("reboot: start reboot.target: %w", err)
	}
	return nil
}

func newOpJobCmd(f *opFlags, use, short string, wait bool) *cobra.Command {
	long := ""
	if !wait {
		long = short + recordFieldsHelp
	}
	return &cobra.Command{
		Use: use + " ID", Short: short, Long: long, Args: cobra.ExactArgs(1),
		Example: "  unitrun op " + use + " 20261202T142501Z-0123abcd\n  unitrun op " + use + " --json 20261202T142501Z-0123abcd",
		RunE: func(cmd *cobra.Command, args []string) error {
			get := f.client().Job
			if wait {
				get = f.waitingClient(cmd).Wait
			}
			rec, err := get(cmd.Context(), args[0])
			if err != nil {
				return jobFailed(err)
			}
			if !wait {
				return printRecordFields(cmd, f, rec)
			}
			if err := printRecord(cmd, f, rec); err != nil {
				return err
			}
			return recordExit(rec)
		},
	}
}

func newOpLogsCmd(f *opFlags) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use: "logs ID", Short: "Print a job's output", Args: cobra.ExactArgs(1),
		Example: "  unitrun op logs 20261202T142501Z-0123abcd\n  unitrun op logs -f 20261202T142501Z-0123abcd",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.waitingClient(cmd).Logs(cmd.Context(), args[0], follow, cmd.OutOrStdout()); err != nil {
				return jobFailed(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "stream the output until the job ends")
	return cmd
}

func newOpJobsCmd(f *opFlags) *cobra.Command {
	return &cobra.Command{
		Use: "jobs", Short: "List the jobs, newest first", Args: cobra.NoArgs,
		Long: `List the jobs this caller may see, newest first. Piped, each job is one
tab-separated line with no header: id, op, state, message, args.`,
		Example: "  unitrun op jobs\n  unitrun op jobs --json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			recs, err := f.client().Jobs(cmd.Context())
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if f.asJSON {
				return printJSON(cmd.OutOrStdout(), recs)
			}
			var rows [][]string
			for _, r := range recs {
				args := make([]string, len(r.Args))
				for i, a := range r.Args {
					args[i] = printable(a)
				}
				rows = append(rows, []string{r.ID, r.Op, string(r.State), printable(r.Message), strings.Join(args, " ")})
			}
			return newTerm(cmd.OutOrStdout()).table([]string{"ID", "OP", "STATE", "MESSAGE", "ARGS"}, rows, 2)
		},
	}
}

func newOpCancelCmd(f *opFlags) *cobra.Command {
	return &cobra.Command{
		Use: "cancel ID", Short: "Cancel a job and print its final record", Args: cobra.ExactArgs(1),
		Long:    "Cancel a job and print its final record" + recordFieldsHelp,
		Example: "  unitrun op cancel 20261202T142501Z-0123abcd",
		RunE: func(cmd *cobra.Command, args []string) error {
			rec, err := f.client().Cancel(cmd.Context(), args[0])
			if err != nil {
				return jobFailed(err)
			}
			return printRecordFields(cmd, f, rec)
		},
	}
}

// printRecord prints the record as JSON on stdout, or as a summary line on
// stderr.
func printRecord(cmd *cobra.Command, f *opFlags, rec *api.Record) error {
	if f.asJSON {
		return printJSON(cmd.OutOrStdout(), rec)
	}
	line := fmt.Sprintf("job %s (op %s): %s", rec.ID, rec.Op, rec.State)
	if rec.Message != "" {
		line += ": " + printable(rec.Message)
	}
	if rec.RebootRequired {
		line += "; reboot required"
	}
	fmt.Fprintln(cmd.ErrOrStderr(), line)
	return nil
}

// recordFieldsHelp ends the help of the commands that print a record with
// printRecordFields.
const recordFieldsHelp = ` on stdout: one field a line,
named as in --json (id, op, args, state, message, unit, invocation_id,
job_result, result, exit_code, signal, reboot_required, caller_uid,
caller_pid, created_at, started_at, finished_at, attempts, key). On a
terminal the values are aligned; piped, each line is the name, a tab and
the value, "-" for none.`

// printRecordFields prints the record on stdout: as JSON, or one field a
// line (see recordFieldsHelp).
func printRecordFields(cmd *cobra.Command, f *opFlags, rec *api.Record) error {
	if f.asJSON {
		return printJSON(cmd.OutOrStdout(), rec)
	}
	when := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	exit := ""
	if rec.ExitCode != nil {
		exit = strconv.Itoa(*rec.ExitCode)
	}
	args := make([]string, len(rec.Args))
	for i, a := range rec.Args {
		args[i] = printable(a)
	}
	rows := [][]string{
		{"id", rec.ID}, {"op", rec.Op}, {"args", strings.Join(args, " ")}, {"state", string(rec.State)},
		{"message", printable(rec.Message)}, {"unit", rec.Unit}, {"invocation_id", rec.InvocationID},
		{"job_result", rec.JobResult}, {"result", rec.Result}, {"exit_code", exit}, {"signal", rec.Signal},
		{"reboot_required", strconv.FormatBool(rec.RebootRequired)},
		{"caller_uid", strconv.FormatUint(uint64(rec.CallerUID), 10)}, {"caller_pid", strconv.Itoa(int(rec.CallerPID))},
		{"created_at", when(&rec.CreatedAt)}, {"started_at", when(rec.StartedAt)}, {"finished_at", when(rec.FinishedAt)},
		{"attempts", strconv.Itoa(rec.Attempts)}, {"key", printable(rec.Key)},
	}
	return newTerm(cmd.OutOrStdout()).table([]string{"FIELD", "VALUE"}, rows, -1)
}

// printable returns s as it is when it holds no control character, else
// quoted as a Go string: a record's args are another caller's strings, and
// must not move the cursor of the terminal that lists them or add a row.
func printable(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// recordExit returns the exit status for a finished job: nil when it
// succeeded, its exit code (128+N for a signal N), or exitFailed.
func recordExit(rec *api.Record) error {
	if rec.State == api.StateSucceeded {
		return nil
	}
	if x := exit.ParseExit(rec.ExitCode, rec.Signal, rec.Result); x.ExitCode > 0 {
		return &exitError{code: x.ExitCode}
	}
	return &exitError{code: exitFailed}
}
