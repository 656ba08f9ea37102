package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/godbus/dbus/v5"
	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// scopeRefuses are the flags of run that --scope does not take: they set
// what a service has and a scope has not, or ask for what a command that
// is unitrun's own child cannot give.
var scopeRefuses = []string{"no-wait", "pty", "service-type", "remain-after-exit",
	"retry", "timeout", "bind-to-caller", "json", "self"}

// scopeApplies are the property flags that set, for a service, what
// unitrun sets itself for a command in a scope, as systemd-run --scope
// does: its nice level, user and group.
var scopeApplies = []string{"nice", "uid", "gid"}

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
// and INVOCATION_ID of the scope). unitrun forwards signals to it
// (forwardedSignals) and exits with its status.
func runScope(cmd *cobra.Command, g *globals, mgr *manager.Conn, f *runFlags, c *job.Cmd) error {
	ctx := cmd.Context()
	name := c.Name // parseRunFlags' scopeName
	if name == "" {
		name = unit.RandomName(f.prefix, "scope")
	}
	props := c.Properties
	if c.Description != "" {
		props = append([]unit.Property{{Name: "Description", Value: dbus.MakeVariant(c.Description)}}, props...)
	}
	cred, credEnv, err := scopeCredential(f.propFlags["uid"], f.propFlags["gid"])
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if c.Dir != "" {
		// Checked here, before anything is created: the child's chdir
		// failing would read as the command's exec failing.
		if err := enterable(c.Dir, cred); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("working directory %s: %w", c.Dir, err)}
		}
	}
	if err := job.StartScope(ctx, mgr, name, c.Args, os.Getpid(), props); err != nil {
		return exitFor(g.unitTaken(cmd.Context(), err, mgr, name), false)
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
	child.Args, child.Dir = c.Args, c.Dir
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	child.Env = append(append(env, credEnv...), c.Env...)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwardedSignals()...)
	defer signal.Stop(sigs)
	// The nice level is a thread's: the child gets that of the thread
	// that starts it.
	runtime.LockOSThread()
	if n, ok := f.propFlags["nice"]; ok {
		nice, _ := strconv.Atoi(n) // checked by parseRunFlags
		if err := unix.Setpriority(unix.PRIO_PROCESS, 0, nice); err != nil {
			runtime.UnlockOSThread()
			return &exitError{code: exitFailed, err: fmt.Errorf("--nice %d: %w", nice, err)}
		}
	}
	err = child.Start()
	runtime.UnlockOSThread()
	if err != nil {
		return exitFor(err, false)
	}
	go func() {
		for s := range sigs {
			child.Process.Signal(s)
		}
	}()
	err = child.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err // nil: exit status 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &exitError{code: 128 + int(ws.Signal())}
	}
	return &exitError{code: ee.ExitCode()}
}

// enterable returns why the command, run with cred (nil: unitrun's own),
// cannot make dir its working directory, as its errno ("no such file or
// directory", "not a directory", "permission denied"), or nil if it can.
// The kernel answers for cred: access(2), which checks with the real ids,
// runs on a thread of its own whose ids and groups are cred's for the
// while (the command gets no supplementary groups, as os/exec sets them);
// a thread whose ids cannot be set back is left to end with its goroutine.
func enterable(dir string, cred *syscall.Credential) error {
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno
		}
		return err
	case !fi.IsDir():
		return syscall.ENOTDIR
	case cred == nil:
		return unix.Access(dir, unix.X_OK)
	}
	ruid, euid, suid := unix.Getresuid()
	rgid, egid, sgid := unix.Getresgid()
	groups, err := unix.Getgroups()
	if err != nil {
		return nil // left to the command's start to report
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		set := func(nr uintptr, a, b, c int) bool {
			_, _, e := unix.RawSyscall(nr, uintptr(a), uintptr(b), uintptr(c))
			return e == 0
		}
		// Without the privilege to set the groups, nothing is changed,
		// and the command's start reports what fails.
		if !set(unix.SYS_SETGROUPS, 0, 0, 0) {
			runtime.UnlockOSThread()
			done <- nil
			return
		}
		var err error
		if set(unix.SYS_SETRESGID, int(cred.Gid), int(cred.Gid), -1) && set(unix.SYS_SETRESUID, int(cred.Uid), int(cred.Uid), -1) {
			err = unix.Access(dir, unix.X_OK)
		}
		if set(unix.SYS_SETRESUID, ruid, euid, suid) && set(unix.SYS_SETRESGID, rgid, egid, sgid) && unix.Setgroups(groups) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// forwardedSignals are the signals to unitrun that runScope forwards to
// the command: SIGINT, SIGTERM and SIGHUP; but when unitrun is in the
// foreground of the terminal on its stdin, the terminal sends its
// Ctrl-C's SIGINT and hang-up's SIGHUP to the command, in unitrun's
// process group, itself, and a forwarded copy would make two: SIGTERM
// alone then.
func forwardedSignals() []os.Signal {
	if fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil && fg == unix.Getpgrp() {
		return []os.Signal{syscall.SIGTERM}
	}
	return interruptSignals
}

// scopeCredential returns the user and group that --uid and --gid name
// (a name, or a number that need not have one; nil for neither), and,
// for a user, the HOME, SHELL, USER and LOGNAME that systemd-run --scope
// sets for it over unitrun's own. Without --gid the group is the user's own.
func scopeCredential(uid, gid string) (*syscall.Credential, []string, error) {
	if uid == "" && gid == "" {
		return nil, nil, nil
	}
	cred := &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	var env []string
	if uid != "" {
		u, err := user.Lookup(uid)
		if _, nerr := strconv.ParseUint(uid, 10, 32); nerr == nil {
			if u, err = user.LookupId(uid); err != nil {
				// A number without a name, as systemd takes it.
				u, err = &user.User{Uid: uid, Gid: uid, Username: uid, HomeDir: "/"}, nil
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--uid %s: %w", uid, err)
		}
		id, _ := strconv.ParseUint(u.Uid, 10, 32)
		group, _ := strconv.ParseUint(u.Gid, 10, 32)
		cred.Uid, cred.Gid = uint32(id), uint32(group)
		// As systemd's get_user_creds with USER_CREDS_CLEAN: no HOME of
		// "/", no SHELL that only refuses logins.
		if u.HomeDir != "" && u.HomeDir != "/" {
			env = append(env, "HOME="+u.HomeDir)
		}
		if shell := passwdShell(u.Username); shell != "" && !slices.Contains(nologin, shell) {
			env = append(env, "SHELL="+shell)
		}
		env = append(env, "USER="+u.Username, "LOGNAME="+u.Username)
	}
	if gid != "" {
		id, err := strconv.ParseUint(gid, 10, 32)
		if err != nil {
			g, lerr := user.LookupGroup(gid)
			if lerr != nil {
				return nil, nil, fmt.Errorf("--gid %s: %w", gid, lerr)
			}
			id, _ = strconv.ParseUint(g.Gid, 10, 32)
		}
		cred.Gid = uint32(id)
	}
	return cred, env, nil
}

// nologin are the shells that systemd takes for placeholders.
var nologin = []string{"/bin/nologin", "/sbin/nologin", "/usr/bin/nologin", "/usr/sbin/nologin"}

// passwdShell is the login shell of name in /etc/passwd, "" if it has
// none there.
func passwdShell(name string) string {
	b, _ := os.ReadFile("/etc/passwd")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) == 7 && f[0] == name {
			return f[6]
		}
	}
	return ""
}
