package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/unitrun/unitrun/inject"
	"github.com/unitrun/unitrun/internal/pty"
	"github.com/unitrun/unitrun/internal/pullexec"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/unit"
)

type runFlags struct {
	unit, prefix  string
	properties    []string
	setenv        []string
	workdir       string
	sameDir       bool
	propFlags     map[string]string // propertyFlags given: flag name → value
	description   string
	timeout       time.Duration
	noWait        bool
	asJSON, quiet bool
	retry         int
	retryDelay    time.Duration
	bindToCaller  bool
	pty, shell    bool
	scope         bool
	self          bool
	injectDir     string
}

func newRunCmd(g *globals) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command as a transient systemd service and wait for it",
		Long: `Run CMD as a transient service (Type=exec) and wait for it, like
"systemd-run --wait --pipe": the command's stdin, stdout and stderr are
unitrun's own, handed to the unit as file descriptors, so output is exact.
CMD is found as systemd-run finds it: a name through $PATH, a relative
path from unitrun's current directory; its argv[0] is then that path.
With -p Restart=, run waits through the restarts until systemd makes no
further run, as "systemd-run --wait" does, and reports the last run (the
restart count is "restarts" in --json).

unitrun exits with the command's exit status, 128+N if a signal N killed
it, 127 if the command is not found, 126 if it cannot be executed, and
125 if unitrun itself failed (no manager, the start job failed). Ctrl-C,
SIGTERM or SIGHUP (a terminal that closed) stops the unit, waits until it
is gone and exits 128+N of that signal (130 for Ctrl-C, 129 for SIGHUP),
whatever status the stopped command ends with.`,
		Example: `  unitrun run -- sh -c 'echo hello; exit 3'
  unitrun run -p MemoryMax=256M -E LANG=C.UTF-8 --timeout 30s -- make -j2
  unitrun run --json --retry 4 --retry-delay 2s -- /usr/bin/podman pull quay.io/example/app
  unitrun run --no-wait --unit nightly-backup.service -- /usr/local/bin/backup
  unitrun run -u nightly-backup --on-calendar '*-*-* 03:00' -- /usr/local/bin/backup
  unitrun run --pty --uid nobody -- top`,
		Args: func(cmd *cobra.Command, args []string) error {
			if slices.Contains(f.properties, "help") {
				return nil // -p help needs no command
			}
			if f.shell {
				if len(args) > 0 {
					return errors.New("--shell runs $SHELL: give no command")
				}
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.propFlags = map[string]string{}
			for _, p := range propertyFlags {
				if fl := cmd.Flags().Lookup(p.flag); fl.Changed {
					f.propFlags[p.flag] = fl.Value.String()
				}
			}
			return runRun(cmd, g, f, args)
		},
	}
	fl := cmd.Flags()
	fl.SetInterspersed(false)
	fl.StringVarP(&f.unit, "unit", "u", "", "unit `NAME`: a name ending in .service, or without a suffix, to which .service is added (default: PREFIX + random)")
	fl.StringVar(&f.prefix, "prefix", job.DefaultPrefix, "prefix of generated unit names")
	fl.StringArrayVarP(&f.properties, "property", "p", nil, "set a unit property `K=V`, as systemd-run -p does (repeatable; -p help lists them)")
	fl.StringArrayVarP(&f.setenv, "setenv", "E", nil, "set an environment variable `K=V` in the unit, or K to pass unitrun's own (empty if unset); the last -E of a name wins, also over -p Environment= (repeatable)")
	fl.StringVar(&f.workdir, "working-directory", "", "working directory of the command (default: the manager's: / for a system manager, the user's home for a user manager)")
	fl.BoolVarP(&f.sameDir, "same-dir", "d", false, "run the command in unitrun's current directory")
	fl.StringVar(&f.description, "description", "", "the unit's description `TEXT` (Description=; default: the command line)")
	for _, p := range propertyFlags {
		if p.yes {
			fl.BoolP(p.flag, p.short, false, p.usage)
		} else {
			fl.StringP(p.flag, p.short, "", p.usage)
		}
	}
	fl.DurationVar(&f.timeout, "timeout", 0, "stop the command after this long (RuntimeMaxSec=)")
	fl.BoolVar(&f.noWait, "no-wait", false, "print the unit name and return once it started; output goes to the journal")
	fl.BoolVar(&f.asJSON, "json", false, "print one result object on stdout (with --no-wait: {\"unit\"}); the command's stdout then goes to stderr")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no summary line")
	fl.IntVar(&f.retry, "retry", 0, "rerun a failed command up to `N` more times, each as a fresh unit")
	fl.DurationVar(&f.retryDelay, "retry-delay", time.Second, "wait before the first retry; doubles for each later one")
	fl.BoolVarP(&f.pty, "pty", "t", false, "run the command on a pseudo-terminal of its own, its controlling terminal, connected to unitrun's streams (unitrun's terminal, if any, in raw mode meanwhile)")
	fl.BoolVarP(&f.shell, "shell", "S", false, "run $SHELL (else /bin/sh) in unitrun's current directory, on a pseudo-terminal if unitrun's stdin, stdout and stderr are terminals")
	fl.BoolVar(&f.scope, "scope", false, "run the command as unitrun's child in a transient scope, with unitrun's streams and environment, and exit with its status")
	addTimerFlags(fl)
	fl.BoolVar(&f.bindToCaller, "bind-to-caller", false, "stop the command when the unit that runs unitrun stops")
	fl.BoolVar(&f.self, "self", false, "run this unitrun binary with ARGS: inject it into --inject-dir (see \"unitrun inject\") and run the copy")
	fl.StringVar(&f.injectDir, "inject-dir", inject.DefaultDir, "directory --self injects into")
	return cmd
}

// parseRunFlags turns flags into a Cmd's settings, validating each.
func parseRunFlags(f *runFlags, c *job.Cmd) error {
	c.Prefix, c.Dir, c.Timeout, c.BindToCaller = f.prefix, f.workdir, f.timeout, f.bindToCaller
	if f.unit != "" {
		// With --scope, the scope's name, which runScope makes.
		name, err := serviceName(f.unit)
		if f.scope {
			name, err = scopeName(f.unit)
		}
		if err != nil {
			return err
		}
		c.Name = name
	} else if err := unit.ValidatePrefix(f.prefix); err != nil {
		return fmt.Errorf("--prefix: %w", err)
	}
	if f.sameDir {
		if f.workdir != "" {
			return fmt.Errorf("--same-dir and --working-directory: give one of them")
		}
		wd, err := os.Getwd()
		var errno syscall.Errno
		switch {
		case errors.Is(err, syscall.ENOENT):
			return errors.New("--same-dir: the current directory was removed: cd to one that exists")
		case errors.As(err, &errno):
			return fmt.Errorf("--same-dir: the current directory cannot be named: %w", errno)
		case err != nil:
			return fmt.Errorf("--same-dir: %w", err)
		}
		c.Dir = wd
	}
	for _, p := range f.properties {
		props, err := unit.ParseProperty(p)
		if errors.Is(err, unit.ErrUnknownProperty) {
			return fmt.Errorf("--property: %w; \"-p help\" lists the known ones", err)
		}
		if err != nil {
			return fmt.Errorf("--property: %w", err)
		}
		c.Properties = append(c.Properties, props...)
	}
	for _, e := range f.setenv {
		kv, err := setenvEntry(e)
		if err != nil {
			return fmt.Errorf("--setenv %q: %w", e, err)
		}
		c.Env = append(c.Env, kv)
	}
	if f.workdir != "" && !strings.HasPrefix(f.workdir, "/") {
		return fmt.Errorf("--working-directory %q: must be an absolute path", f.workdir)
	}
	if f.timeout < 0 {
		return fmt.Errorf("--timeout %v: must not be negative", f.timeout)
	}
	if f.retry < 0 {
		return fmt.Errorf("--retry %d: must not be negative", f.retry)
	}
	if f.retryDelay < 0 {
		return fmt.Errorf("--retry-delay %v: must not be negative", f.retryDelay)
	}
	if f.retry > 0 {
		c.Retry = &job.RetryPolicy{Attempts: f.retry + 1, Delay: f.retryDelay}
	}
	if i := strings.IndexFunc(f.description, unicode.IsControl); i >= 0 {
		return fmt.Errorf("--description %q: must not contain control characters (byte %d)", f.description, i)
	}
	c.Description = f.description
	// As systemd-run does, these come after -p's and win over them.
	for _, p := range propertyFlags {
		v, ok := f.propFlags[p.flag]
		if !ok || f.scope && slices.Contains(scopeRefuses, p.flag) {
			continue // for --scope, one not given (runRun refused it else)
		}
		if p.value != nil {
			var err error
			if v, err = p.value(v); err != nil {
				return fmt.Errorf("--%s: %w", p.flag, err)
			}
			if v == "" {
				continue // the manager's default
			}
		}
		props, err := unit.ParseProperty(p.property + "=" + v)
		if err != nil {
			return fmt.Errorf("--%s: %w", p.flag, err)
		}
		if f.scope && slices.Contains(scopeApplies, p.flag) {
			continue // unitrun applies it to the command itself
		}
		c.Properties = append(c.Properties, props...)
	}
	if f.pty && f.noWait {
		// systemd-run refuses --pty with --no-block too.
		return errors.New("--pty and --no-wait: unitrun waits for the command on its terminal; give one of them")
	}
	if f.propFlags["remain-after-exit"] == "true" && !f.noWait {
		// systemd keeps the streams handed to a unit while the unit is
		// loaded, so a caller would wait for their end until someone
		// stops it; systemd-run -r does not wait either.
		return errors.New("--remain-after-exit: the unit stays after its run, with unitrun's output streams open: give --no-wait too (output then goes to the journal)")
	}
	return nil
}

// propertyFlags are systemd-run's flags that each set one property of
// the service, as its -p would; their values are checked as -p checks
// that property's.
var propertyFlags = []struct {
	flag, short, property, usage string
	yes                          bool                         // a switch: the property is set to yes
	value                        func(string) (string, error) // the property's value from the flag's, "" for none; nil: as given
}{
	{flag: "nice", property: "Nice", usage: "nice level `N` of the command, -20..19 (Nice=)"},
	{flag: "slice", property: "Slice", usage: "run the unit in slice `NAME`, \".slice\" added if it has no unit type suffix; empty: the default slice (Slice=)", value: sliceName},
	{flag: "service-type", property: "Type", usage: "service `TYPE`: simple, exec, forking, oneshot, dbus, notify or idle (Type=; default exec)"},
	{flag: "uid", property: "User", usage: "run the command as `USER`, a name or number (User=)", value: userName},
	{flag: "gid", property: "Group", usage: "run the command as `GROUP`, a name or number (Group=)", value: userName},
	{flag: "send-sighup", property: "SendSIGHUP", usage: "send SIGHUP after SIGTERM when the unit is stopped (SendSIGHUP=yes)", yes: true},
	{flag: "remain-after-exit", short: "r", property: "RemainAfterExit", usage: "leave the unit active after the command exits, until it is stopped (RemainAfterExit=yes)", yes: true},
}

// sliceName is the slice that systemd-run's --slice NAME names: NAME, with
// ".slice" added unless it ends so or in the suffix of another unit type,
// which is refused, as the manager refuses it for systemd-run; an empty
// NAME names none: the manager's default slice.
func sliceName(name string) (string, error) {
	if name == "" || strings.HasSuffix(name, ".slice") {
		return name, nil
	}
	if full, err := unit.Complete(name); err == nil && full == name {
		return "", fmt.Errorf("%q is not a slice: give a name ending in .slice, or no suffix", name)
	}
	return name + ".slice", nil
}

// userName checks the value of --uid or --gid as the manager checks User=
// and Group=: a number that is an ID (not 4294967295, nor 65535, which
// mean none), or a name without control characters, ':' or '/', not
// starting with '-', not all digits, not "." or ".."; empty names none,
// as for systemd-run.
func userName(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if strings.Trim(name, "0123456789") == "" {
		if id, err := strconv.ParseUint(name, 10, 32); err != nil || id == math.MaxUint32 || id == math.MaxUint16 {
			return "", fmt.Errorf("%q: not a user or group ID (0..4294967294, not 65535)", name)
		}
		return name, nil
	}
	if name == "." || name == ".." || name[0] == '-' || strings.ContainsAny(name, ":/") ||
		strings.IndexFunc(name, unicode.IsControl) >= 0 || !utf8.ValidString(name) {
		return "", fmt.Errorf("%q: not a user or group name (no control characters, ':' or '/', not starting with '-')", name)
	}
	return name, nil
}

// setenvEntry turns the value of -E into an environment entry as
// systemd-run does: NAME=VALUE as given, and NAME alone as NAME and its
// value in unitrun's environment, empty if it has none.
func setenvEntry(e string) (string, error) {
	k, v, ok := strings.Cut(e, "=")
	if !ok {
		v = os.Getenv(k)
	}
	if _, err := unit.QuoteEnv(k, v); err != nil {
		return "", err
	}
	return k + "=" + v, nil
}

func runRun(cmd *cobra.Command, g *globals, f *runFlags, args []string) error {
	ctx := cmd.Context()
	if f.self {
		self, err := inject.Self(ctx, f.injectDir, pod.HookPath, pullexec.Path)
		if err != nil {
			return injectError("--inject-dir", err)
		}
		args = append([]string{self}, args...)
	}
	if slices.Contains(f.properties, "help") {
		fmt.Fprintln(cmd.OutOrStdout(), strings.Join(unit.KnownProperties(), "\n"))
		return nil
	}
	if f.shell {
		if f.noWait {
			// systemd-run refuses --shell with --no-block too.
			return &exitError{code: exitUsage, err: errors.New("--shell and --no-wait: unitrun waits for the shell; give one of them")}
		}
		// As systemd-run -S: $SHELL, in the current directory, on a
		// terminal of its own when unitrun is on one.
		shell := os.Getenv("SHELL")
		if shell == "" {
			shell = "/bin/sh"
		}
		args = []string{shell}
		f.sameDir = f.sameDir || f.workdir == ""
		f.pty = f.pty || !f.scope && newTerm(os.Stdin).tty && newTerm(os.Stdout).tty && newTerm(os.Stderr).tty
	}
	c := job.CommandContext(ctx, nil, args[0], args[1:]...)
	// As systemd-run does: the command's argv[0] is its path, resolved
	// from unitrun's directory or $PATH.
	c.Args[0] = c.Path
	if cmd.Flags().Changed("unit") && f.unit == "" {
		// systemd-run refuses it too; it must not mean a random name.
		return &exitError{code: exitUsage, err: fmt.Errorf("--unit: must not be empty")}
	}
	timer, err := timerProperties(cmd.Flags())
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if timer != nil {
		for _, name := range timerRefuses {
			if given(cmd.Flags(), name) {
				// systemd-run refuses --scope, --pty and --wait with a timer too.
				return &exitError{code: exitUsage, err: fmt.Errorf("--%s and a timer: a timer runs the command later, on its own; give one of them", name)}
			}
		}
		for _, w := range c.Args {
			if !utf8.ValidString(w) {
				// Checked by job.Cmd.StartTimer too, after the manager is
				// reached: here it is bad input, found before anything.
				return &exitError{code: exitUsage, err: fmt.Errorf("command word %q: not valid UTF-8, which a timer's command line must be (it goes to the manager over D-Bus)", w)}
			}
		}
		f.noWait = true // its output goes to the journal, -r is for it
	}
	if f.scope {
		for _, name := range scopeRefuses {
			if given(cmd.Flags(), name) || name == "pty" && f.pty {
				// systemd-run refuses --pty, --service-type, -r and --wait with --scope too.
				return &exitError{code: exitUsage, err: fmt.Errorf("--scope and --%s: a scope runs the command as unitrun's own child; give one of them", name)}
			}
		}
	}
	if err := parseRunFlags(f, c); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	// A missing command is reported before anything starts, as a shell
	// would; --json still prints its one object, with the reason.
	if _, err := exec.LookPath(c.Path); err != nil {
		ee := exitFor(err, false)
		if f.asJSON {
			r := newResult(c.Name, nil, err) // exit_code 127 or 126
			r.Error = ee.Error()
			printLine(cmd.OutOrStdout(), r)
		}
		return ee
	}
	mgr, err := g.openToRun(ctx)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	defer mgr.Close()
	if f.scope {
		return runScope(cmd, g, mgr, f, c)
	}
	if timer != nil {
		return startTimer(cmd, g, mgr, f, c, timer)
	}
	c.Manager = mgr
	if f.noWait {
		detached := job.Detached()
		if remainsAfterExit(c.Properties) {
			// As systemd-run -r leaves it: a failed run stays loaded as
			// failed, one that ended while starting too.
			detached = append(detached, unit.Property{Name: "CollectMode", Value: dbus.MakeVariant("inactive")})
			c.Keep = func() bool { return true }
		}
		c.Properties = append(detached, c.Properties...)
		if err := c.Start(); err != nil {
			// A command that ended before its start was done, too: its
			// outcome is told as a run's, with --json in one object.
			return report(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), c.Unit, c.Status, g.unitTaken(ctx, err, mgr, c.Name), f.asJSON, f.quiet)
		}
		if f.asJSON {
			return printLine(cmd.OutOrStdout(), map[string]string{"unit": c.Unit})
		}
		fmt.Fprintln(cmd.OutOrStdout(), c.Unit)
		return nil
	}
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if f.asJSON {
		c.Stdout = os.Stderr
	}
	if f.pty {
		p, perr := pty.Open()
		if perr != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("--pty: %w", perr)}
		}
		c.Properties = append(c.Properties, ptyProperties(p)...)
		if term, ok := os.LookupEnv("TERM"); ok {
			c.Env = append([]string{"TERM=" + term}, c.Env...) // -E TERM= wins
		}
		p.Forward(os.Stdin, c.Stdout, true)
		err = c.Run()
		p.Finish()
	} else {
		err = c.Run()
	}
	err = g.unitTaken(ctx, err, mgr, c.Name)
	return report(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c.Unit, c.Status, err, f.asJSON, f.quiet)
}

// remainsAfterExit reports whether the unit of props remains after its
// command exits: the last RemainAfterExit= of props (-r, -p) is yes.
func remainsAfterExit(props []unit.Property) bool {
	remain := false
	for _, p := range props {
		if v, ok := p.Value.Value().(bool); ok && p.Name == "RemainAfterExit" {
			remain = v
		}
	}
	return remain
}

// given reports whether the flag name of fl was given a value other than
// its default: --json=false or --retry 0 asks for nothing.
func given(fl *pflag.FlagSet, name string) bool {
	f := fl.Lookup(name)
	return f.Changed && f.Value.String() != f.DefValue
}

// unitTaken tells err, if it says that the unit name is taken, with what
// frees it on mgr. A name that a unit file defines (or a template's, for
// an instance) is never free for a run, whatever is stopped or reset, as
// systemd-run says ("was already loaded or has a fragment file"): then
// it says which file, and that --unit must name another. Else (a unit
// loaded, as a run leaves one, failed or running) it tells the systemctl
// commands that show that unit and free its name; for the embedded
// manager, first the eval of "unitrun manager env" that points systemctl
// at it, with --embedded-dir where g names another than the default.
func (g *globals) unitTaken(ctx context.Context, err error, mgr *manager.Conn, name string) error {
	if !errors.Is(err, job.ErrUnitExists) {
		return err
	}
	read, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer done()
	if p, perr := mgr.Properties(read, name, manager.UnitIface, "FragmentPath", "Transient"); perr == nil {
		if file, _ := p["FragmentPath"].Value().(string); file != "" && p["Transient"].Value() != true {
			what := "unit file"
			if filepath.Base(file) != name {
				what = "template unit file"
			}
			return fmt.Errorf("%w: the %s %s defines %s, and a run cannot take the name of a unit file's unit: give --unit another name", err, what, file, name)
		}
	}
	t := mgr.Target()
	systemctl, first := "systemctl --user", ""
	switch {
	case t.Spec == string(manager.KindSystem):
		systemctl = "systemctl"
	case t.Spec == string(manager.KindEmbedded):
		env := "unitrun manager env"
		if dir := g.embedded().Dir; dir != manager.DefaultEmbeddedDir {
			env = "unitrun --embedded-dir " + shellQuote(dir) + " manager env"
		}
		first = ` (first point systemctl at the embedded manager: eval "$(` + env + `)")`
	case t.Spec != string(manager.KindUser):
		for _, kv := range t.Env {
			if k, v, _ := strings.Cut(kv, "="); k == "XDG_RUNTIME_DIR" {
				systemctl = "XDG_RUNTIME_DIR=" + shellQuote(v) + " " + systemctl
			}
		}
	}
	q := name
	if strings.ContainsRune(name, '\\') {
		q = shellQuote(name)
	}
	return fmt.Errorf("%w: see it with \"%s status %s\", free the name with \"%s stop %s; %s reset-failed %s\"%s",
		err, systemctl, q, systemctl, q, systemctl, q, first)
}
