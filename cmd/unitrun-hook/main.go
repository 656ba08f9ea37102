// Command unitrun-hook runs what systemd starts on every run of a pod's
// app, at a fraction of what unitrun itself costs to start: the exit hook
// (each app's ExecStopPost=, and an init app's ExecStartPost=), which
// records the exit the moment it happens, and the log copier of each run.
// Pods use it when it is installed beside unitrun (pod.HookPath). It links
// the standard library and unitrun's light packages pod/record and
// pod/logcopy alone (its deps test holds it to a list), so it starts in a
// fraction of the time of unitrun (docs/performance.md, Pods).
//
// Its arguments are unitrun's path, then the command line unitrun would
// run for the same work:
//
//	unitrun-hook UNITRUN pod reap-app --state-dir DIR [--manager SPEC] POD APP
//	unitrun-hook UNITRUN pod log-copy
//
// It records the exit itself ([record.RecordExit]), with the policies the
// pod's creation saved ([record.ReadPolicy]). It executes UNITRUN with
// those arguments instead when the exit needs the manager, to tell a stop
// from outside from an exit on its own (an exit that would restart the
// app), when the pod has no saved policies (an older unitrun created it),
// or when it is given any other command line; and it executes "UNITRUN
// pod end" when the exit it recorded ends the pod. It copies the log
// itself ([logcopy.Copy]).
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
)

func main() {
	if len(os.Args) < 2 || !filepath.IsAbs(os.Args[1]) {
		fmt.Fprintln(os.Stderr, "usage: unitrun-hook UNITRUN pod reap-app --state-dir DIR [--manager SPEC] POD APP\n       unitrun-hook UNITRUN pod log-copy\n(UNITRUN: the absolute path of unitrun, which runs any other command line)")
		os.Exit(2)
	}
	unitrun, args := os.Args[1], os.Args[2:]
	if len(args) == 2 && args[0] == "pod" && args[1] == "log-copy" {
		if err := logcopy.Copy(); err != nil {
			fmt.Fprintf(os.Stderr, "unitrun-hook: %v\n", err)
			os.Exit(125)
		}
		return
	}
	if r, ok := parseReapApp(args); ok {
		end, err := recordExit(r)
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
			args = r.endArgs()
		}
	}
	err := syscall.Exec(unitrun, append([]string{unitrun}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "unitrun-hook: run %s: %v\n", unitrun, err)
	os.Exit(125)
}

// errNoPolicy is recordExit's error for a pod that has no saved
// policies; it has written nothing then.
var errNoPolicy = errors.New("the pod has no saved policies")

// recordExit records the exit that reap-app r is run for, as
// [record.RecordExit] does, reporting whether it ends the pod.
func recordExit(r reapApp) (bool, error) {
	p, err := record.ReadPolicy(r.stateDir, r.pod)
	if errors.Is(err, fs.ErrNotExist) {
		return false, errNoPolicy
	}
	if err != nil {
		return false, err
	}
	return record.RecordExit(r.stateDir, r.pod, r.app, p, record.HookEnvFromOS(), nil)
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
	return r, record.CheckNames(r.pod, r.app) == nil
}

// endArgs is the command line by which unitrun ends the pod.
func (r reapApp) endArgs() []string {
	args := []string{"pod", "end", "--state-dir", r.stateDir}
	if r.manager != "" {
		args = append(args, "--manager", r.manager)
	}
	return append(args, r.pod)
}
