package podrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/manager/boot"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/record"
)

// A NoAppError is the error for an app that pod Pod does not have.
type NoAppError struct{ Pod, App string }

func (e *NoAppError) Error() string { return fmt.Sprintf("pod %s has no app %q", e.Pod, e.App) }

// A NotRunningError is the error for an app that is not running: waiting
// to start, waiting out a back-off, or ended (State), or, State "", whose
// record says running but whose unit or pod has no process left (it has
// just ended).
type NotRunningError struct {
	Pod, App string
	State    record.AppState
}

func (e *NotRunningError) Error() string {
	if e.State == "" {
		return fmt.Sprintf("app %s of pod %s is not running", e.App, e.Pod)
	}
	return fmt.Sprintf("app %s of pod %s is not running (it is %s)", e.App, e.Pod, e.State)
}

// Exec runs argv in the context of app of pod name, which must be
// running, and returns only if it could not: the process that calls it
// becomes argv's, in the app's cgroup (moved there by the manager, so that
// the app's limits hold it and the app's stop ends it), in the app's mount
// namespace (its volumes, a read-only root), and, for an isolated pod,
// in the pod's namespaces, with the app's user, groups, environment,
// rootfs, working directory, capability bounding set and no-new-privileges
// ([ExecIn]). Where the process is in other namespaces than the app's, it
// executes "unitrun pod exec" again through nsenter, in the app's, which
// then does the rest (for an isolated pod, by the pod's own systemd):
// argv's process is then that one. Its stdin, stdout and stderr are the
// caller's.
//
// A command that cannot be executed is an *exec.Error, wrapping
// exec.ErrNotFound for one that does not exist; a pod that does not exist
// a *NoPodError, an app it does not have a *NoAppError, an app that is not
// running a *NotRunningError.
func (r *Runner) Exec(ctx context.Context, name, app string, argv []string) error {
	m, a, err := r.execTarget(name, app)
	if err != nil {
		return err
	}
	if isolated(m) && !inContainer(r.StateDir, name) {
		pid, err := readContainerPID(r.StateDir, name)
		if err != nil {
			return &NotRunningError{Pod: name, App: app}
		}
		// nsenter forks to enter the PID namespace: on a terminal,
		// setsid makes the terminal the controlling one of a session
		// that the command leads, inside the namespace, where its
		// foreground process group can be seen (tcgetpgrp).
		inner := r.ExecArgv(innerManager, name, app, argv)
		if controllingTerminal() {
			inner = append([]string{"setsid", "--ctty"}, inner...)
		}
		return execve(boot.EnterCommand(pid, inner[0], inner[1:]...))
	}
	unitName := pod.AppUnit(name, app)
	props, err := r.Mgr.Properties(ctx, unitName, manager.ServiceIface, "MainPID", "Delegate")
	if err != nil {
		return err
	}
	mainPID, _ := props["MainPID"].Value().(uint32)
	if mainPID == 0 {
		return &NotRunningError{Pod: name, App: app}
	}
	if delegated, _ := props["Delegate"].Value().(bool); !delegated {
		return fmt.Errorf("app %s of pod %s cannot take a command: its unit is not delegated (Delegate=yes), as a unitrun before pod exec made it; create the pod again", app, name)
	}
	if !sameMountNamespace(int(mainPID)) {
		inner := r.ExecArgv(r.Manager, name, app, argv)
		return execve(exec.Command("nsenter", append([]string{"-t", strconv.Itoa(int(mainPID)), "-m", "--"}, inner...)...))
	}
	if err := r.Mgr.AttachProcessesToUnit(ctx, unitName, uint32(os.Getpid())); err != nil {
		return fmt.Errorf("join the cgroup of app %s: %w", app, err)
	}
	return ExecIn(a, argv)
}

// CheckExec returns the error that Exec would return at once for app of
// pod name: a *NoPodError, a *NoAppError or a *NotRunningError.
func (r *Runner) CheckExec(name, app string) error {
	_, _, err := r.execTarget(name, app)
	return err
}

// execTarget returns pod name's manifest and its app, if it is running.
func (r *Runner) execTarget(name, app string) (*pod.Manifest, *pod.App, error) {
	if err := r.exists(name); err != nil {
		return nil, nil, err
	}
	m, err := pod.LoadSpec(r.StateDir, name)
	if err != nil {
		return nil, nil, err
	}
	a := m.App(app)
	if a == nil {
		return nil, nil, &NoAppError{Pod: name, App: app}
	}
	s, err := record.ReadAppOrNew(r.StateDir, name, app)
	if err != nil {
		return nil, nil, err
	}
	if s.State != record.AppRunning {
		return nil, nil, &NotRunningError{Pod: name, App: app, State: s.State}
	}
	return m, a, nil
}

// ExecArgv is the command line of "unitrun pod exec" that runs argv in
// app of pod name, reaching the manager by spec; its stdin is already
// what the command gets (-i).
func (r *Runner) ExecArgv(spec, name, app string, argv []string) []string {
	args := []string{r.Binary, "pod", "exec", "--state-dir", r.StateDir}
	if spec != "" {
		args = append(args, "--manager", spec)
	}
	return append(append(args, "-i", name, app, "--"), argv...)
}

// execve executes cmd in place of the process; it returns only if it
// could not.
func execve(cmd *exec.Cmd) error {
	if cmd.Err != nil {
		return cmd.Err
	}
	return fmt.Errorf("%s: %w", cmd.Args[0], syscall.Exec(cmd.Path, cmd.Args, os.Environ()))
}

// inContainer reports whether the process runs in isolated pod name's
// container, whose /run is the pod's STATE/pods/P/run.
func inContainer(stateDir, name string) bool {
	run, err := os.Stat("/run")
	if err != nil {
		return false
	}
	own, err := os.Stat(filepath.Join(record.Dir(stateDir, name), containerRun))
	return err == nil && os.SameFile(run, own)
}

// sameMountNamespace reports whether process pid is in the process's
// mount namespace.
func sameMountNamespace(pid int) bool {
	self, err := os.Stat("/proc/self/ns/mnt")
	if err != nil {
		return true
	}
	other, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	return err != nil || os.SameFile(self, other)
}

// controllingTerminal reports whether the process leads a session whose
// controlling terminal is its stdin, as "pod exec -t" starts it.
func controllingTerminal() bool {
	sid, err := unix.Getsid(0)
	if err != nil || sid != os.Getpid() {
		return false
	}
	tsid, err := unix.IoctlGetInt(0, unix.TIOCGSID)
	return err == nil && tsid == sid
}

// ExecIn sets up the process as app a's command gets it and executes argv
// instead, in the cgroup it is in ([appexec.Context.Exec]); on a terminal
// (stdin), argv also gets the process's TERM, unless a's env sets one.
// It returns only if it could not, with an *exec.Error.
func ExecIn(a *pod.App, argv []string) error {
	if len(argv) == 0 {
		return errors.New("no command to run")
	}
	spec := a.ExecSpec()
	if term, ok := os.LookupEnv("TERM"); ok && isTerminal(0) {
		if _, set := spec.Env["TERM"]; !set {
			spec.Env = maps.Clone(spec.Env)
			if spec.Env == nil {
				spec.Env = map[string]string{}
			}
			spec.Env["TERM"] = term
		}
	}
	c, err := appexec.Resolve(spec)
	if err == nil {
		err = c.Exec(argv)
	}
	return &exec.Error{Name: argv[0], Err: err}
}

// isTerminal reports whether fd is a terminal.
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
