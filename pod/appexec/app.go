// Package appexec starts the runs of a pod's apps, and runs commands in an
// app's context. [Start] is the main process of an app's service
// ("unitrun pod unit-hook start POD APP"): it waits out the back-off of a
// run that follows a restart, records the run's start, pipes its output
// to the log copier and executes the app's command in the app's context
// ([Context.Exec]): its user and groups, environment, rootfs, working
// directory, capabilities and noNewPrivileges. "unitrun pod exec" runs a
// user's command in a running app with the same [Context.Exec] (package
// pod/podrun), once it is in the app's cgroup and namespaces. [Load] reads
// what that needs of an app from the pod's state.
//
// It links the standard library and unitrun's small pod/record and
// unit/exit (and golang.org/x/sys/unix) alone: the pods' small hook
// binary, cmd/unitrun-hook, runs it at every run of every app, and starts
// in a fraction of the time that unitrun takes; unitrun runs it where no
// hook is installed beside it, and where the hook cannot resolve a user or
// group name ([NamesKnown]).
package appexec

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/unitrun/unitrun/pod/record"
)

// An App is what running an app's command takes, as the pod's manifest
// sets it (package pod's App.ExecSpec returns it; the pod's spec file,
// record.SpecFile, holds it under the same JSON names).
type App struct {
	Name       string            `json:"name"`
	Exec       []string          `json:"exec"`
	Env        map[string]string `json:"env"`
	WorkingDir string            `json:"workingDir"`
	User       string            `json:"user"`
	Group      string            `json:"group"`
	Rootfs     string            `json:"rootfs"`
	// Capabilities, if not nil, are the only capabilities the command
	// can hold, named as CapabilityNames; nil keeps every one.
	Capabilities []string `json:"capabilities"`
	// NoNewPrivileges keeps the command and what it executes from
	// gaining privileges (setuid, file capabilities).
	NoNewPrivileges        bool   `json:"noNewPrivileges"`
	TerminationMessagePath string `json:"terminationMessagePath"`
	Init                   bool   `json:"init"`
	// Identity, if not nil, is whom the commands run as, resolved at the
	// pod's creation in the /etc/passwd and /etc/group of the app's image:
	// User and Group are then its numbers, and no name is looked up on
	// the host.
	Identity *Identity `json:"identity,omitzero"`
	// Probed is whether the app has a startup or readiness probe, which
	// then says when a run is ready.
	Probed bool `json:"-"`
}

// An Identity is a user as an image's own files resolve it.
type Identity struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitzero"` // supplementary groups
	Home   string   `json:"home,omitzero"`
}

// Load returns app of pod as the pod's spec file holds it. The error
// wraps fs.ErrNotExist for a pod that a unitrun without spec files
// created.
func Load(stateDir, pod, app string) (*App, error) {
	if err := record.CheckNames(pod, app); err != nil {
		return nil, err
	}
	data, err := record.ReadFile(stateDir, "pods", pod, record.SpecFile)
	if err != nil {
		return nil, err
	}
	var spec struct {
		Apps []struct {
			App
			StartupProbe   json.RawMessage `json:"startupProbe"`
			ReadinessProbe json.RawMessage `json:"readinessProbe"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(record.Dir(stateDir, pod), record.SpecFile), err)
	}
	for _, a := range spec.Apps {
		if a.Name == app {
			a.App.Probed = set(a.StartupProbe) || set(a.ReadinessProbe)
			return &a.App, nil
		}
	}
	return nil, fmt.Errorf("pod %s has no app %q", pod, app)
}

// set reports whether v holds a JSON value other than null.
func set(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// CapabilityNames are the Linux capabilities by number, named without
// CAP_, as Kubernetes spells them.
var CapabilityNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
	"CHECKPOINT_RESTORE",
}

// NumericID reports whether name, a user or group, is a numeric ID: a
// number below 2³²-1, which stands for no ID.
func NumericID(name string) bool {
	id, err := strconv.ParseUint(name, 10, 32)
	return err == nil && id < 1<<32-1
}
