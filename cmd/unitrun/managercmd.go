package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/manager"
)

func newManagerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Show, start or stop the systemd manager unitrun uses",
		Long: `unitrun reaches a systemd manager chosen by --manager or $UNITRUN_MANAGER:
  system        the system manager (its private socket as root, else the system bus)
  user          the calling user's manager
  private:PATH  any manager's private socket
  embedded      a user manager unitrun boots in a private mount namespace
  auto          system if systemd is PID 1, else user if reachable, else embedded

The embedded manager lives in --embedded-dir (default /run/unitrun/manager),
starts on first use and is reused by later invocations until stopped.`,
	}
	cmd.AddCommand(newManagerStatusCmd(g), newManagerStartCmd(g), newManagerStopCmd(g), newManagerEnvCmd(g))
	return cmd
}

func (g *globals) embedded() *manager.Embedded {
	o := manager.Options{EmbeddedDir: g.embeddedDir}
	return o.Embedded()
}

func newManagerStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Tell which manager --manager picks, and why",
		Long: `List the managers tried, in order, whether each was reached and why, then
the one used. Piped, each try is one tab-separated line (yes/no, manager,
detail) and the last line is "using MANAGER (systemd VERSION) at ADDRESS", or
"using embedded (not booted) at ADDRESS" for an embedded manager that the
first run will boot. It exits 125 when no manager can be had.`,
		Example: "  unitrun manager status\n  unitrun --manager embedded manager status --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			c, tries, err := manager.Probe(ctx, g.manager, manager.Options{EmbeddedDir: g.embeddedDir}, false)
			type attempt struct {
				Manager string `json:"manager"`
				Address string `json:"address,omitempty"`
				Reached bool   `json:"reached"`
				Why     string `json:"why,omitempty"`
				Error   string `json:"error,omitempty"`
			}
			type status struct {
				Chosen    string    `json:"chosen,omitempty"`
				Address   string    `json:"address,omitempty"`
				Version   string    `json:"version,omitempty"`
				NotBooted bool      `json:"not_booted,omitempty"`
				Tried     []attempt `json:"tried"`
				Env       []string  `json:"env,omitempty"`
			}
			var s status
			for _, a := range tries {
				at := attempt{Manager: a.Target.Spec, Address: a.Target.Address, Reached: a.Err == nil, Why: a.Why}
				if a.Err != nil {
					at.Error = a.Err.Error()
				}
				s.Tried = append(s.Tried, at)
			}
			// The failure: no manager reached, and none that a run
			// would boot (the embedded one not booted yet is one).
			var failed error
			switch last := tries[len(tries)-1]; {
			case c != nil:
				defer c.Close()
				s.Chosen, s.Address, s.Env = c.Target().Spec, c.Target().Address, c.Target().Env
				s.Version, _ = c.Version(ctx)
			case errors.Is(last.Err, manager.ErrNotBooted):
				s.Chosen, s.Address, s.Env, s.NotBooted = last.Target.Spec, last.Target.Address, last.Target.Env, true
			default:
				failed = &exitError{code: exitFailed, err: fmt.Errorf("no manager reachable (%v); the embedded one starts on first use, or with \"unitrun manager start\"", err)}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := printJSON(out, s); err != nil {
					return err
				}
				return failed // told on stderr, stdout holding the status
			}
			var rows [][]string
			for _, a := range s.Tried {
				mark := "no"
				if a.Reached {
					mark = "yes"
				}
				// Why, or why not: the error of a dial tells the
				// address it dialed.
				detail := a.Why
				switch {
				case a.Error != "" && a.Why != "skipped" && a.Address != "":
					detail = a.Address + ": " + a.Error
				case a.Error != "":
					detail = a.Error
				}
				rows = append(rows, []string{mark, a.Manager, detail})
			}
			if err := newTerm(out).table([]string{"REACHED", "MANAGER", "DETAIL"}, rows, 0); err != nil {
				return err
			}
			switch {
			case failed != nil:
				return failed
			case s.NotBooted:
				fmt.Fprintf(out, "using %s (not booted) at %s\n", s.Chosen, s.Address)
			default:
				fmt.Fprintf(out, "using %s (systemd %s) at %s\n", s.Chosen, s.Version, s.Address)
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON, "print the status as JSON")
	return cmd
}

func newManagerStartCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "start",
		Short:   "Boot the embedded manager unless it is running",
		Example: "  unitrun manager start && eval \"$(unitrun manager env)\" && systemctl --user list-units",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e := g.embedded()
			started, err := e.Ensure(cmd.Context())
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					Dir     string `json:"dir"`
					PID     int    `json:"pid"`
					Started bool   `json:"started"`
				}{e.Dir, e.PID(), started})
			}
			what := "already running"
			if started {
				what = "started"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "embedded manager %s in %s (pid %d)\n", what, e.Dir, e.PID())
			return nil
		},
	}
	jsonFlag(cmd, &asJSON, `print {"dir", "pid", "started"} as JSON`)
	return cmd
}

func newManagerStopCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "stop",
		Short:   "Stop the embedded manager and every unit it runs",
		Example: "  unitrun manager stop\n  unitrun --embedded-dir /tmp/m manager stop",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.embedded().Stop(cmd.Context(), 30*time.Second); err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			return nil
		},
	}
}

func newManagerEnvCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the exports that point systemctl --user and systemd-run --user at the embedded manager",
		Long: `Print the exports that point systemctl --user and systemd-run --user at
the embedded manager, then, as a shell comment, the journalctl command that
reads its journal, where its units' output goes (with --json, only the
variables).`,
		Example: "  eval \"$(unitrun manager env)\"\n  systemctl --user status\n  journalctl --directory=/run/unitrun/manager/log/journal -u pivot.service",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e := g.embedded()
			env := map[string]string{}
			for _, kv := range e.Env() {
				k, v, _ := strings.Cut(kv, "=")
				if !asJSON {
					fmt.Fprintf(cmd.OutOrStdout(), "export %s=%s\n", k, shellQuote(v))
				}
				env[k] = v
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), env)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# its journal: journalctl --directory=%s\n", shellQuote(e.JournalDir()))
			return nil
		},
	}
	jsonFlag(cmd, &asJSON, "print the variables as one JSON object")
	return cmd
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
