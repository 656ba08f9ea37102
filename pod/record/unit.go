package record

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// UnitPrefix starts the name of every unit of every pod.
const UnitPrefix = "unitrun-pod-"

// AppUnit is the name of the service that runs app of pod (names that
// CheckNames accepts), as package pod names it: each '-' escaped as \x2d,
// as systemd escapes it in a unit name; such names hold nothing else to
// escape.
func AppUnit(pod, app string) string {
	return UnitPrefix + escapeName(pod) + "-" + escapeName(app) + ".service"
}

// escapeName is name, one CheckNames accepts, as it appears inside a unit
// name.
func escapeName(name string) string { return strings.ReplaceAll(name, "-", `\x2d`) }

// HookCommand is the hidden command of unitrun under which a pod's units
// run its hooks: "unitrun pod unit-hook NAME ...". No user types it: each
// hook refuses to run outside the unit it belongs to ([CheckInUnit]).
const HookCommand = "unit-hook"

// Hooks that the small hook binary runs, as package pod names them with
// the others.
const (
	HookStart   = "start"    // an app's ExecStart=: records a run's start, executes its command
	HookLogCopy = "log-copy" // copies a run's output to its log, started by HookStart
	HookReapApp = "reap-app" // an app's ExecStopPost=: records each exit
	HookEnd     = "end"      // ends the pod after an exit that HookReapApp recorded ends it
)

// ErrNotInUnit is the error of a hook run outside the unit it belongs to.
var ErrNotInUnit = errors.New("refused outside its unit")

// CheckInUnit returns an error wrapping ErrNotInUnit unless this process
// runs in unit: the control group that /proc/self/cgroup names (in any
// hierarchy) is the unit's own, or one below it (systemd runs a delegated
// unit's hooks in a subgroup). hook names the hook in the error. A hook
// that a user starts by hand runs in the user's session, not in the pod's
// unit, and would record a run that is not the unit's.
func CheckInUnit(hook, unit string) error {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return fmt.Errorf("pod %s %s: cannot tell which unit runs it: %w", HookCommand, hook, err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		// hierarchy-ID:controllers:path
		_, rest, _ := strings.Cut(line, ":")
		_, path, _ := strings.Cut(rest, ":")
		for elem := range strings.SplitSeq(path, "/") {
			if elem == unit {
				return nil
			}
		}
	}
	return fmt.Errorf("pod %s %s: %w: only %s runs it, as a hook of its own; to run a command in an app, use unitrun pod exec", HookCommand, hook, ErrNotInUnit, unit)
}
