// Command unitrun-hook runs what systemd starts on every run of a pod's
// app, at a fraction of what unitrun itself costs to start: the exit hook
// (each app's ExecStopPost=, and an init app's ExecStartPost=), which
// records the exit the moment it happens, and the log copier of each run.
// Pods use it when it is installed beside unitrun (pod.HookPath). It links
// package pod and the standard library (its deps test keeps the rest of
// unitrun out), so it starts in about half the time of unitrun
// (docs/performance.md, Pods).
//
// Its arguments are unitrun's path, then the command line unitrun would
// run for the same work:
//
//	unitrun-hook UNITRUN pod reap-app --state-dir DIR [--manager SPEC] POD APP
//	unitrun-hook UNITRUN pod log-copy
//
// It records the exit itself ([pod.RecordExit]). It executes UNITRUN with
// those arguments instead when the exit needs the manager, to tell a stop
// from outside from an exit on its own (an exit that would restart the
// app), or when it is given any other command line; and it executes
// "UNITRUN pod end" when the exit it recorded ends the pod. It copies the
// log itself ([pod.LogCopy]).
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/unitrun/unitrun/pod"
)

func main() {
	if len(os.Args) < 2 || !filepath.IsAbs(os.Args[1]) {
		fmt.Fprintln(os.Stderr, "usage: unitrun-hook UNITRUN pod reap-app --state-dir DIR [--manager SPEC] POD APP\n       unitrun-hook UNITRUN pod log-copy\n(UNITRUN: the absolute path of unitrun, which runs any other command line)")
		os.Exit(2)
	}
	unitrun, args := os.Args[1], os.Args[2:]
	if len(args) == 2 && args[0] == "pod" && args[1] == "log-copy" {
		if err := pod.LogCopy(); err != nil {
			fmt.Fprintf(os.Stderr, "unitrun-hook: %v\n", err)
			os.Exit(125)
		}
		return
	}
	if r, ok := parseReapApp(args); ok {
		end, err := pod.RecordExit(r.stateDir, r.pod, r.app, pod.HookEnvFromOS(), nil)
		switch {
		case errors.Is(err, pod.ErrNeedsStopJob):
			// unitrun records it, asking the manager.
		case err != nil:
			fmt.Fprintf(os.Stderr, "unitrun-hook: %v\n", err)
			os.Exit(125)
		case !end:
			return
		default:
			args = r.endArgs()
		}
	}
	err := syscall.Exec(unitrun, append([]string{unitrun}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "unitrun-hook: run %s: %v\n", unitrun, err)
	os.Exit(125)
}

// reapApp is the command line "pod reap-app --state-dir DIR [--manager
// SPEC] POD APP", as a pod's units give it.
type reapApp struct {
	stateDir, manager, pod, app string
}

// parseReapApp parses args as the command line of reap-app, exactly as
// package pod renders it; ok is false for any other.
func parseReapApp(args []string) (r reapApp, ok bool) {
	if len(args) < 6 || args[0] != "pod" || args[1] != "reap-app" || args[2] != "--state-dir" {
		return r, false
	}
	r.stateDir, args = args[3], args[4:]
	if len(args) == 4 && args[0] == "--manager" {
		r.manager, args = args[1], args[2:]
	}
	if len(args) != 2 || !filepath.IsAbs(r.stateDir) || filepath.Clean(r.stateDir) != r.stateDir {
		return r, false
	}
	r.pod, r.app = args[0], args[1]
	return r, pod.CheckNames(r.pod, r.app) == nil
}

// endArgs is the command line by which unitrun ends the pod.
func (r reapApp) endArgs() []string {
	args := []string{"pod", "end", "--state-dir", r.stateDir}
	if r.manager != "" {
		args = append(args, "--manager", r.manager)
	}
	return append(args, r.pod)
}
