// Command unitrun-hook runs what systemd starts on every run of a pod's
// app, at a fraction of what unitrun itself costs to start: the start
// hook (each app's ExecStart=), which records the run's start and
// executes the app's command; the log copier of each run; and the exit
// hook (each app's ExecStopPost=, and an init app's ExecStartPost=), which
// records the exit the moment it happens. Pods use it when it is
// installed beside unitrun (pod.HookPath). It links the standard library
// and unitrun's light packages pod/record, pod/logcopy, pod/appexec and
// unit/exit alone (its deps test holds it to a list), so it starts in a
// fraction of the time of unitrun (docs/performance.md, Pods).
//
// Its arguments are unitrun's path, then the command line unitrun would
// run for the same work:
//
//	unitrun-hook UNITRUN pod unit-hook start --state-dir DIR [--manager SPEC] POD APP
//	unitrun-hook UNITRUN pod unit-hook log-copy --state-dir DIR [--manager SPEC] POD APP
//	unitrun-hook UNITRUN pod unit-hook reap-app --state-dir DIR [--manager SPEC] POD APP
//
// As unitrun does, it refuses each outside the app's unit, with exit
// status 2 (record.CheckInUnit). It starts the run itself
// ([appexec.Start]), and executes UNITRUN with those arguments instead
// when the app's user or group is not in /etc/passwd or /etc/group, the
// only user database a static build reads (unitrun asks NSS), or the pod
// has no spec file (an older unitrun created it). It records the exit
// itself ([record.RecordExit]), with the policies the pod's creation saved
// ([record.ReadPolicy]), and executes UNITRUN with those arguments instead
// when the exit needs the manager, to tell a stop from outside from an
// exit on its own (an exit that would restart the app), or when the pod
// has no saved policies; and it executes "UNITRUN pod unit-hook end" when
// the exit it recorded ends the pod. It copies the log itself
// ([logcopy.Copy]). It executes UNITRUN with any other command line.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit/exit"
)

func main() {
	if len(os.Args) < 2 || !filepath.IsAbs(os.Args[1]) {
		fmt.Fprintln(os.Stderr, "usage: unitrun-hook UNITRUN pod unit-hook start|log-copy|reap-app --state-dir DIR [--manager SPEC] POD APP\n(UNITRUN: the absolute path of unitrun, which runs any other command line)")
		os.Exit(2)
	}
	unitrun, args := os.Args[1], os.Args[2:]
	if h, ok := parseHook(args); ok {
		if err := record.CheckInUnit(h.name, record.AppUnit(h.pod, h.app)); err != nil {
			fmt.Fprintf(os.Stderr, "unitrun: %v\n", err)
			os.Exit(2)
		}
		switch h.name {
		case record.HookStart:
			start(h, unitrun, args)
		case record.HookLogCopy:
			if err := logcopy.Copy(); err != nil {
				fmt.Fprintf(os.Stderr, "unitrun-hook: %v\n", err)
				os.Exit(125)
			}
			return
		case record.HookReapApp:
			end, err := recordExit(h)
			switch {
			case errors.Is(err, record.ErrNeedsStopJob), errors.Is(err, errNoPolicy):
				// unitrun records it, asking the manager, or reading the
				// policies from the manifest.
			case err != nil:
				fmt.Fprintf(os.Stderr, "unitrun-hook: %v\n", err)
				os.Exit(125)
			case !end:
				return
			default:
				args = h.args(record.HookEnd)
			}
		}
	}
	run(unitrun, args)
}

// run executes unitrun with args.
func run(unitrun string, args []string) {
	err := syscall.Exec(unitrun, append([]string{unitrun}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "unitrun-hook: run %s: %v\n", unitrun, err)
	os.Exit(125)
}

// start starts the run of the app that hook h is run for, as unitrun's
// start hook does, with its exit statuses: 127 or 126 for a command that
// cannot be executed, as with "unitrun run", 125 for any other failure.
// It has unitrun, run with args, start a run whose user or group it
// cannot resolve, or that of a pod without a spec file.
func start(h hook, unitrun string, args []string) {
	a, err := appexec.Load(h.stateDir, h.pod, h.app)
	if errors.Is(err, fs.ErrNotExist) {
		run(unitrun, args)
	}
	if err == nil {
		var self string
		if self, err = os.Executable(); err == nil {
			copier := append([]string{self, unitrun}, h.args(record.HookLogCopy)...)
			err = appexec.Start(h.stateDir, h.pod, a, copier, func() error {
				run(unitrun, args)
				return nil
			})
		}
	}
	code := 125
	if xe := (*exec.Error)(nil); errors.As(err, &xe) {
		code, err = exit.ExecFailed(xe.Err).ExitCode, exit.NotExecuted(err)
	}
	fmt.Fprintf(os.Stderr, "unitrun: %v\n", err)
	os.Exit(code)
}

// errNoPolicy is recordExit's error for a pod that has no saved
// policies; it has written nothing then.
var errNoPolicy = errors.New("the pod has no saved policies")

// recordExit records the exit that reap-app h is run for, as
// [record.RecordExit] does, reporting whether it ends the pod.
func recordExit(h hook) (bool, error) {
	p, err := record.ReadPolicy(h.stateDir, h.pod)
	if errors.Is(err, fs.ErrNotExist) {
		return false, errNoPolicy
	}
	if err != nil {
		return false, err
	}
	return record.RecordExit(h.stateDir, h.pod, h.app, p, record.HookEnvFromOS(), nil)
}

// hook is the command line "pod unit-hook NAME --state-dir DIR [--manager
// SPEC] POD APP", as a pod's units give it.
type hook struct {
	name, stateDir, manager, pod, app string
}

// parseHook parses args as the command line of the start hook, the log
// copier or the exit hook, exactly as package pod renders it; ok is false
// for any other.
func parseHook(args []string) (h hook, ok bool) {
	if len(args) < 7 || args[0] != "pod" || args[1] != record.HookCommand || args[3] != "--state-dir" {
		return h, false
	}
	switch args[2] {
	case record.HookStart, record.HookLogCopy, record.HookReapApp:
	default:
		return h, false
	}
	h.name, h.stateDir, args = args[2], args[4], args[5:]
	if len(args) == 4 && args[0] == "--manager" {
		h.manager, args = args[1], args[2:]
	}
	if len(args) != 2 || !filepath.IsAbs(h.stateDir) || filepath.Clean(h.stateDir) != h.stateDir {
		return h, false
	}
	h.pod, h.app = args[0], args[1]
	return h, record.CheckNames(h.pod, h.app) == nil
}

// args is the command line of hook name for the pod and app of h.
func (h hook) args(name string) []string {
	args := []string{"pod", record.HookCommand, name, "--state-dir", h.stateDir}
	if h.manager != "" {
		args = append(args, "--manager", h.manager)
	}
	return append(args, h.pod, h.app)
}
