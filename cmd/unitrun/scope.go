package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/godbus/dbus/v5"
	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// scopeRefuses are the flags of run that --scope does not take: they set
// what a service has and a scope has not, or ask for what a command that
// is unitrun's own child cannot give.
var scopeRefuses = []string{"no-wait", "pty", "service-type", "remain-after-exit", "uid", "gid", "nice",
	"retry", "timeout", "bind-to-caller", "json", "self"}

// scopeName is the scope that -u NAME names: NAME with ".scope" added if
// it has no type suffix, as systemd-run --scope -u adds it.
func scopeName(name string) (string, error) {
	full, err := unit.Complete(name)
	switch {
	case err != nil:
		return "", fmt.Errorf("--unit: %w", err)
	case full == name+".service":
		return name + ".scope", nil
	case !strings.HasSuffix(full, ".scope"):
		return "", fmt.Errorf("--unit %q: --scope runs a scope: give a name ending in .scope, or no suffix", name)
	}
	return full, nil
}

// runScope runs the command c describes as unitrun's child in a transient
// scope, as "systemd-run --scope" does: unitrun puts itself in the new
// scope, so that the command is in it from its first instruction, and
// runs the command there with unitrun's streams and environment (and -E,
// and INVOCATION_ID of the scope). unitrun forwards SIGINT, SIGTERM and
// SIGHUP to it and exits with its status.
func runScope(cmd *cobra.Command, mgr *manager.Conn, f *runFlags, c *job.Cmd) error {
	ctx := cmd.Context()
	name := c.Name // parseRunFlags' scopeName
	if name == "" {
		name = unit.RandomName(f.prefix, "scope")
	}
	props := c.Properties
	if c.Description != "" {
		props = append([]unit.Property{{Name: "Description", Value: dbus.MakeVariant(c.Description)}}, props...)
	}
	if err := job.StartScope(ctx, mgr, name, c.Args, os.Getpid(), props); err != nil {
		return exitFor(unitTaken(err, mgr.Target(), name), false)
	}
	env := os.Environ()
	if p, err := mgr.Properties(ctx, name, manager.UnitIface); err == nil {
		if id, ok := p["InvocationID"].Value().([]byte); ok {
			env = append(env, "INVOCATION_ID="+hex.EncodeToString(id))
		}
	}
	if !f.quiet {
		fmt.Fprintln(cmd.ErrOrStderr(), "Running scope as unit:", name)
	}
	child := exec.Command(c.Path)
	child.Args, child.Env, child.Dir = c.Args, append(env, c.Env...), c.Dir
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, interruptSignals...)
	defer signal.Stop(sigs)
	if err := child.Start(); err != nil {
		return exitFor(err, false)
	}
	go func() {
		for s := range sigs {
			child.Process.Signal(s)
		}
	}()
	err := child.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err // nil: exit status 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &exitError{code: 128 + int(ws.Signal())}
	}
	return &exitError{code: ee.ExitCode()}
}
