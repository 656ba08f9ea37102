// Package job runs commands as transient systemd units, and starts existing
// units, and waits race-free for their outcome: the os/exec of systemd.
//
// A Cmd is shaped like exec.Cmd. Start creates a transient service
// (Type=exec) whose standard input, output and error are file descriptors
// handed to systemd, so output is exact and binary-safe; it returns once
// systemd's start job is done. Wait waits for the main process to end and
// returns the Status systemd recorded (ExecMainCode, ExecMainStatus, Result).
// Signals are correlated by job object path and unit, read from a
// subscription made before the start, and the unit is kept loaded for the
// caller (AddRef=yes; where the manager is on no bus, RemainAfterExit=yes;
// and by its pin: Cmd.Pin) until its outcome has been read, then stopped
// or reset and let go so systemd collects it: no unit is left behind, and
// a caller that dies leaves its unit to be collected when its run ends.
package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// DefaultPrefix starts the names of units that unitrun generates.
const DefaultPrefix = "unitrun-"

// stopTimeout is how long a stopped unit's processes get between SIGTERM
// and SIGKILL, unless Properties set TimeoutStopSec.
const stopTimeout = 10 * time.Second

// cleanupTimeout bounds the calls that release a unit after its run.
const cleanupTimeout = 30 * time.Second

// Cmd is a command to run as a transient systemd service.
//
// A Cmd cannot be reused after Start, Run, Output or CombinedOutput.
type Cmd struct {
	// Path is the command to run. Command resolves a name without a slash
	// through the caller's $PATH as exec.LookPath does, and a relative path
	// from the caller's current directory, as systemd-run does (the two
	// joined, not simplified); it must be absolute by Start.
	Path string
	// Args holds the command line, including the command as Args[0].
	Args []string
	// Env holds "KEY=value" entries added to the unit's environment, which
	// otherwise is the manager's default environment (not the caller's).
	// Each KEY must match [A-Za-z_][A-Za-z0-9_]* and each value be valid
	// UTF-8 without NUL bytes. If a KEY appears more than once, the last
	// entry wins, as in os/exec; Env also wins over an Environment= in
	// Properties, as systemd-run's -E wins over its -p Environment=.
	Env []string
	// Dir is the working directory; empty means the manager's default. It
	// must hold no control characters. Where the manager sees the
	// caller's file system (manager.Conn.SharesFS), Start refuses a Dir
	// that cannot be entered before anything is created; elsewhere
	// systemd's failure to enter it is a *JobError naming it.
	Dir string

	// Stdin, Stdout and Stderr are the unit's standard streams. An *os.File
	// is handed to systemd as is; any other value is connected through a
	// pipe copied by a goroutine, as os/exec does; nil means the null device.
	// If Stdout and Stderr are the same writer, one descriptor serves both.
	// A stream that Properties set (StandardInput=, StandardOutput=,
	// StandardError=, as Detached does) is left to that property, and its
	// field is not used.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	// Name is the unit's name: a service, named with or without its
	// ".service" suffix, which Start then adds (unit.Complete). A name
	// that is taken makes Start fail with ErrUnitExists. Empty means
	// Prefix followed by random hex and ".service".
	Name string
	// Prefix starts a generated name; empty means DefaultPrefix.
	Prefix string
	// Description is the unit's Description=; empty means one derived from
	// Args. It must hold no control characters.
	Description string
	// Properties are set on the unit after unitrun's own, so they override
	// them. They reach systemd as given, unchecked: no string in them may
	// come from someone the caller does not trust. One that
	// unit.ParseProperty made of a setting newer than the manager's
	// systemd is refused before anything starts, with a *unit.VersionError.
	Properties []unit.Property
	// Timeout, if positive, limits the run (RuntimeMaxSec=): systemd stops
	// the unit and the Status reports Result "timeout".
	Timeout time.Duration
	// BindToCaller binds the unit to the unit that holds the calling process
	// (BindsTo= and After=), so it stops when that unit or container scope
	// stops, even if nothing is left to cancel it.
	BindToCaller bool
	// Retry, if set, reruns the command as a fresh unit after outcomes it
	// names. Stdin must then be nil or an *os.File that can be re-read. The
	// unit of a run that is retried stays loaded, with its outcome, through
	// the back-off, and is released just before the next run is created.
	Retry *RetryPolicy
	// Exited, if set, is called once with the final Status (nil if the
	// command never ran) and the error that Wait or Run will return, as
	// soon as that outcome is known: for a run that ended after its start,
	// before its unit is released (stopped, its ExecStopPost= commands run,
	// collected), which Wait and Run still wait for. Output copied through
	// a pipe may still be arriving when it is called, and a failure to copy
	// it is reported by Wait alone.
	Exited func(*Status, error)
	// Keep, if set, is called for a run that ended, just after Exited;
	// if it reports true, the run's unit is not released: it stays loaded
	// (with its pin, Pin), with its outcome, for the caller to release
	// later or for another process to Attach, as after a crash of this
	// one. The host API daemon keeps the unit of a job whose outcome it
	// could not store yet.
	Keep func() bool
	// Attempting, if set, is called with the number of each run, from 1,
	// before its unit is created.
	Attempting func(n int)
	// Invoked, if set, is told the invocation ID (hex) of each run as soon
	// as systemd announces it, before the run ends; it may be told one ID
	// more than once. It is called in the goroutine that waits for the run.
	Invoked func(id string)
	// Pin, if set, keeps the unit loaded, with its outcome, however its
	// run ends and whoever stops or resets it, until the run is released
	// (by Wait, Run, or Attach in another process): the unit Wants= a
	// transient timer of its own name (PinName), created with it, that
	// never elapses, and systemd collects no unit that an active unit
	// refers to. Releasing the run stops the pin too. A pinned unit has
	// no RemainAfterExit: it goes inactive when its command exits, and
	// the release of a run that ended needs no stop of the unit, only of
	// the pin. It is for a caller that may die while the run ends and
	// must read the outcome when it comes back, as the host API daemon
	// does.
	Pin bool

	// Manager is the connection to the manager the command runs on.
	Manager *manager.Conn

	// Unit is the name of the unit the command runs as; set by Start.
	Unit string
	// Status describes the finished run; set by Wait.
	Status *Status

	ctx     context.Context
	env     []string // Env without repeated keys
	lookErr error
	run     *run
	held    *run // a failed run's, loaded through the back-off before a retry
	tries   int
	waited  bool
	exited  bool
}

// Command returns a Cmd that runs name with args on the manager reached by
// mgr. A name without a slash is resolved through $PATH now, and a
// relative path from the current directory; if that fails, Start reports
// the error (an *exec.Error, which wraps exec.ErrNotFound for a name not
// found).
func Command(mgr *manager.Conn, name string, args ...string) *Cmd {
	return CommandContext(context.Background(), mgr, name, args...)
}

// CommandContext is Command with a context: if ctx is done before the run
// ends, unitrun stops the unit (its whole cgroup), waits until it is gone,
// and Wait returns an error that wraps ctx.Err().
func CommandContext(ctx context.Context, mgr *manager.Conn, name string, args ...string) *Cmd {
	c := &Cmd{Path: name, Args: append([]string{name}, args...), Manager: mgr, ctx: ctx}
	switch {
	case !strings.Contains(name, "/"):
		if p, err := exec.LookPath(name); err != nil {
			c.lookErr = err
		} else {
			c.Path = p
		}
	case !filepath.IsAbs(name):
		if wd, err := os.Getwd(); err != nil {
			c.lookErr = &exec.Error{Name: name, Err: errors.New("relative to a current directory that cannot be read")}
		} else {
			c.Path = strings.TrimSuffix(wd, "/") + "/" + name
		}
	}
	return c
}

// Run starts the command and waits for it to finish. The error is nil if it
// exited with status 0; an *ExitError if it ran and failed; a *JobError if
// systemd's start job failed. With a Retry policy, Run reruns the command
// while the policy asks for it.
func (c *Cmd) Run() error {
	err := c.start()
	if err == nil {
		return c.Wait()
	}
	if c.tries > 0 {
		// The run ended while starting (a start job failed, or the command
		// exited before systemd saw it start): a retry may follow.
		err = c.retry(err)
	}
	c.exit(err)
	// Kept (Keep): left loaded, no longer watched, as Wait leaves it.
	c.releaseHeld((*run).abort)
	return err
}

// Output runs the command and returns its standard output.
func (c *Cmd) Output() ([]byte, error) {
	if c.Stdout != nil {
		return nil, errors.New("job: Stdout already set")
	}
	var b bytes.Buffer
	c.Stdout = &b
	err := c.Run()
	return b.Bytes(), err
}

// CombinedOutput runs the command and returns its standard output and
// standard error together, in the order written.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	if c.Stdout != nil || c.Stderr != nil {
		return nil, errors.New("job: Stdout or Stderr already set")
	}
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	err := c.Run()
	return b.Bytes(), err
}

// Start starts the command as a transient unit and returns once systemd's
// start job is done, that is, once the command has been executed. It does
// not wait for it to finish.
func (c *Cmd) Start() error {
	err := c.start()
	if c.Keep != nil && c.Keep() {
		// A run that ended while starting and that Keep keeps: left
		// loaded, as Wait leaves it.
		c.releaseHeld((*run).abort)
	}
	// Only Run retries a run that ended while starting.
	c.releaseHeld((*run).release)
	return err
}

// start is Start, but a run that ended while starting and that a retry
// would follow stays held (Cmd.held) for Run.
func (c *Cmd) start() error {
	if c.Manager == nil {
		return errors.New("job: Cmd has no manager (use job.Command)")
	}
	if c.run != nil || c.tries > 0 {
		return errors.New("job: already started")
	}
	if c.lookErr != nil {
		return c.lookErr
	}
	if err := c.check(); err != nil {
		return err
	}
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	// Where the manager sees the caller's file system, a working
	// directory that cannot be entered is refused before anything starts.
	if c.Dir != "" && c.Manager.SharesFS(c.ctx) {
		if err := checkDir(c.Dir); err != nil {
			return fmt.Errorf("working directory %s: %w", c.Dir, err)
		}
	}
	// A property newer than the manager's systemd is refused before
	// anything is created (*unit.VersionError); the manager's version is
	// asked for only where a property needs one newer than unit.Oldest.
	if unit.NeedsVersion(c.Properties) {
		v, err := c.Manager.Version(c.ctx)
		if err != nil {
			return err
		}
		if err := unit.CheckVersion(c.Properties, v); err != nil {
			return err
		}
	}
	return c.startRun()
}

// check validates the Cmd before anything is created.
func (c *Cmd) check() error {
	if !filepath.IsAbs(c.Path) {
		return &exec.Error{Name: c.Path, Err: errors.New("not an absolute path")}
	}
	if fi, err := os.Stat(c.Path); err != nil {
		return &exec.Error{Name: c.Path, Err: exec.ErrNotFound}
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return &exec.Error{Name: c.Path, Err: errors.New("permission denied")}
	}
	if len(c.Args) == 0 {
		c.Args = []string{c.Path}
	}
	if c.Name != "" {
		name, err := unit.Complete(c.Name)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(name, ".service") {
			return fmt.Errorf("job: unit name %q: a command runs as a service, not a %s", c.Name, name[strings.LastIndexByte(name, '.')+1:])
		}
		c.Name = name
	}
	if c.Prefix != "" {
		if err := unit.ValidatePrefix(c.Prefix); err != nil {
			return err
		}
	}
	// systemd 252 writes both unescaped into the transient unit's file, so
	// a line break would add settings at the next daemon-reload.
	for _, f := range []struct{ name, value string }{{"Description", c.Description}, {"Dir", c.Dir}} {
		if i := strings.IndexFunc(f.value, isControl); i >= 0 {
			return fmt.Errorf("job: %s %q: must not contain control characters (byte %d)", f.name, f.value, i)
		}
	}
	for i, kv := range c.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("job: Env[%d] %q: must be KEY=value", i, kv)
		}
		if _, err := unit.QuoteEnv(k, v); err != nil {
			return fmt.Errorf("job: Env[%d]: %w", i, err)
		}
	}
	c.env = dedupEnv(c.Env)
	for i, a := range c.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("job: Args[%d]: contains a NUL byte", i)
		}
	}
	if c.Retry != nil {
		if err := c.Retry.check(); err != nil {
			return err
		}
		if c.Stdin != nil {
			if _, ok := c.Stdin.(*os.File); !ok {
				return errors.New("job: Retry needs Stdin to be nil or an *os.File, a stream cannot be replayed")
			}
		}
	}
	return nil
}

// unitName is the name of a run's unit: Name, or Prefix (DefaultPrefix if
// empty) followed by random hex and ".service".
func (c *Cmd) unitName() string {
	if c.Name != "" {
		return c.Name
	}
	prefix := c.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return unit.RandomName(prefix, "service")
}

// startRun starts one attempt.
func (c *Cmd) startRun() error {
	name := c.unitName()
	r := &run{mgr: c.Manager, unit: name, typ: "exec", hold: c.holds, invoked: c.Invoked, fixed: c.Name != ""}
	if c.Exited != nil {
		r.ended = c.runEnded
	}
	if err := r.claim(c.ctx, c.Name != "", c.Path, c.Args, c.env); err != nil {
		return err
	}
	r.ref = c.Manager.CanRef(c.ctx)
	// Without a drop-in, the command line goes over D-Bus: exact unless a
	// daemon-reload comes before the exec (see needsDropIn).
	props, err := c.properties(r.dropIn == "", r.ref)
	if err != nil {
		r.removeDropIn()
		return err
	}
	for _, p := range c.Properties {
		if v, ok := p.Value.Value().(string); ok {
			switch p.Name {
			case "Type":
				r.typ = v
			case "Restart":
				r.restarts = v != "no"
			}
		}
	}
	// A pinned run's caller may die while the unit restarts: the paths
	// would then name nothing, and every later run fail (209/STDOUT).
	r.byPath = r.restarts && !c.Pin && c.Manager.SharesProcs(c.ctx)
	if err := r.openStdio(c.Stdin, c.Stdout, c.Stderr, c.Properties); err != nil {
		r.removeDropIn()
		return err
	}
	props = append(props, r.stdioProperties()...)
	props = append(props, c.Properties...)
	if r.dropIn == "" && len(c.env) > 0 {
		// After Properties: the manager merges each Environment= into the
		// last, and Env wins.
		props = append(props, unit.Property{Name: "Environment", Value: dbus.MakeVariant(c.env)})
	}
	c.tries++
	c.Unit = name
	if c.Attempting != nil {
		c.Attempting(c.tries)
	}
	var aux []manager.Aux
	if c.Pin {
		wants, pin := pinUnit(name)
		props, aux = append(props, wants), []manager.Aux{pin}
		r.pin = pin.Name
	}
	if err := r.start(c.ctx, props, aux...); err != nil {
		if r.held {
			c.held = r
		}
		var ee *ExitError
		if errors.As(err, &ee) {
			c.setStatus(ee.Status)
		} else if r.canceled != nil {
			c.setStatus(r.canceled)
		}
		return err
	}
	c.run = r
	return nil
}

// properties returns unitrun's own properties for the unit; withExec adds
// the command line and environment. With ref, the unit is kept loaded for
// this process (AddRef=yes) until its run is released or the process is
// gone, and then collected however it ended; without, it remains active
// after its command exits (RemainAfterExit=yes), unless it is pinned.
func (c *Cmd) properties(withExec, ref bool) ([]unit.Property, error) {
	props := []unit.Property{
		{Name: "Description", Value: dbus.MakeVariant(c.description())},
		{Name: "Type", Value: dbus.MakeVariant("exec")},
		{Name: "RemainAfterExit", Value: dbus.MakeVariant(!c.Pin && !ref)},
		{Name: "TimeoutStopUSec", Value: dbus.MakeVariant(uint64(stopTimeout.Microseconds()))},
	}
	if ref {
		props = append(props,
			unit.Property{Name: "AddRef", Value: dbus.MakeVariant(true)},
			unit.Property{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")})
	}
	if withExec {
		// systemd expands $VAR, ${VAR} and $$ in command lines, even those
		// given over D-Bus; doubling every $ makes the words arrive as given.
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = strings.ReplaceAll(a, "$", "$$")
		}
		props = append(props, unit.Exec("ExecStart", c.Path, args))
	}
	if c.Dir != "" {
		props = append(props, unit.Property{Name: "WorkingDirectory", Value: dbus.MakeVariant(c.Dir)})
	}
	if c.Timeout > 0 {
		props = append(props, unit.Property{Name: "RuntimeMaxUSec", Value: dbus.MakeVariant(uint64(c.Timeout.Microseconds()))})
	}
	if c.BindToCaller {
		bind, err := BindTo(c.ctx, c.Manager, uint32(os.Getpid()))
		if err != nil {
			return nil, fmt.Errorf("job: bind to caller: no unit of manager %s holds process %d: %w", c.Manager.Target().Spec, os.Getpid(), err)
		}
		props = append(props, bind...)
	}
	return props, nil
}

// BindTo returns the properties that bind a unit to the unit of mgr that
// holds process pid (BindsTo= and After= that unit), so that the unit stops
// when that unit or container scope stops: what Cmd.BindToCaller sets for
// the calling process, and the daemon's bind_to_caller for its caller. The
// error is mgr's when no unit holds pid.
func BindTo(ctx context.Context, mgr *manager.Conn, pid uint32) ([]unit.Property, error) {
	u, err := mgr.UnitByPID(ctx, pid)
	if err != nil {
		return nil, err
	}
	return []unit.Property{
		{Name: "BindsTo", Value: dbus.MakeVariant([]string{u})},
		{Name: "After", Value: dbus.MakeVariant([]string{u})},
	}, nil
}

// dedupEnv returns env with only the last entry of each key, in the order
// of those last entries, as os/exec does.
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		k, _, _ := strings.Cut(env[i], "=")
		if !seen[k] {
			seen[k] = true
			out = append(out, env[i])
		}
	}
	slices.Reverse(out)
	return out
}

// isControl reports an ASCII control character.
func isControl(r rune) bool { return r < ' ' || r == 0x7f }

// description is the unit's Description=: Description, or one made from
// Args.
func (c *Cmd) description() string {
	if c.Description != "" {
		return c.Description
	}
	return describe(c.Args)
}

// describe makes a Description= from argv: printable, valid UTF-8, short.
func describe(args []string) string {
	s := strings.ToValidUTF8(strings.Join(args, " "), "?")
	s = strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "..."
	}
	return "unitrun: " + s
}

// Wait waits for the command to finish, releases its unit, waits for the
// output copying to end, and sets Status. A unit whose Properties set
// Restart= (other than "no") finishes when systemd makes no further run
// (as systemd-run --wait waits): Status is its last run's, with the
// restart count (NRestarts). With a Retry policy it reruns the command as
// a fresh unit while the policy asks for it.
func (c *Cmd) Wait() error {
	if c.run == nil {
		return errors.New("job: not started")
	}
	if c.waited {
		return errors.New("job: Wait was already called")
	}
	c.waited = true
	err := c.retry(c.waitRun())
	c.exit(err)
	// Kept (Keep): left loaded, no longer watched.
	c.releaseHeld((*run).abort)
	return err
}

// holds reports whether the run that ended with err is left loaded: for
// a retry that follows it, or because Keep says so.
func (c *Cmd) holds(err error) bool {
	return c.retries(err) || c.Keep != nil && c.Keep()
}

// waitRun waits for the current run and records its Status.
func (c *Cmd) waitRun() error {
	st, err := c.run.wait(c.ctx)
	if c.run.held {
		c.held = c.run
	}
	c.setStatus(st)
	return err
}

// releaseHeld releases, with release or handOver, the unit of a run
// that a retry follows, which waitRun left loaded for the back-off.
func (c *Cmd) releaseHeld(how func(*run)) {
	if c.held != nil {
		how(c.held)
		c.held = nil
	}
}

// runEnded is told the outcome of a run before its unit is released: one
// that ends the command goes to Exited.
func (c *Cmd) runEnded(st *Status, err error) {
	if !c.retries(err) {
		c.setStatus(st)
		c.exit(err)
	}
}

// exit calls Exited, once, with the command's outcome.
func (c *Cmd) exit(err error) {
	if c.Exited != nil && !c.exited {
		c.exited = true
		c.Exited(c.Status, err)
	}
}

// retries reports whether the outcome err of the current run asks for
// another run.
func (c *Cmd) retries(err error) bool {
	return err != nil && c.Retry != nil && c.tries < c.Retry.Attempts && c.Retry.Retries(err)
}

func (c *Cmd) setStatus(st *Status) {
	if st != nil {
		st.Attempts = c.tries
		c.Status = st
	}
}

// retry reruns the command after the outcome err while the policy asks.
func (c *Cmd) retry(err error) error {
	for c.retries(err) {
		select {
		case <-time.After(c.Retry.Backoff(c.tries)):
		case <-c.ctx.Done():
			c.releaseHeld((*run).release)
			return fmt.Errorf("%s: canceled before attempt %d: %w", c.Unit, c.tries+1, c.ctx.Err())
		}
		c.releaseHeld((*run).handOver)
		if err = c.startRun(); err == nil {
			err = c.waitRun()
		}
	}
	return err
}
