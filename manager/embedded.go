package manager

import (
	"context"
	"time"

	"github.com/unitrun/unitrun/manager/boot"
)

// Embedded is the embedded manager as its clients reach it: a systemd user
// manager that unitrun boots (package boot) where no manager is reachable,
// living in Dir, its XDG_RUNTIME_DIR. Once booted it outlives the process
// that booted it and is reused by later ones until Stop.
type Embedded struct {
	Dir string
}

func (e *Embedded) boot() *boot.Embedded { return &boot.Embedded{Dir: e.Dir} }

// Socket returns the path of the manager's private socket.
func (e *Embedded) Socket() string { return e.boot().Socket() }

// Target returns how to dial the embedded manager.
func (e *Embedded) Target() Target {
	b := e.boot()
	return Target{Spec: string(KindEmbedded), Address: unixAddress(b.Socket()), Peer: true, Env: runtimeEnv(e.Dir),
		Journal: Journal{Dir: b.JournalDir(), Sockets: b.JournalSockets()}}
}

// JournalDir returns the directory of the journal files that the embedded
// manager's journald writes: "journalctl --directory=" reads them.
func (e *Embedded) JournalDir() string { return e.boot().JournalDir() }

// Env returns the exports that point systemctl --user and systemd-run --user
// at the embedded manager.
func (e *Embedded) Env() []string { return runtimeEnv(e.Dir) }

// PID returns the process id of the running embedded manager, or 0.
func (e *Embedded) PID() int { return e.boot().PID() }

// Running reports whether the manager answers on its private socket.
func (e *Embedded) Running() bool { return e.boot().Running() }

// Cgroup is the name of the cgroup the embedded manager runs in, below the
// root of each hierarchy (see boot.Embedded.Cgroup).
func (e *Embedded) Cgroup() string { return e.boot().Cgroup() }

// Ensure boots the embedded manager unless it is running, and reports whether
// it booted it. Concurrent callers, in this process or others, boot one
// manager between them (see boot.Embedded.Ensure).
func (e *Embedded) Ensure(ctx context.Context) (bool, error) { return e.boot().Ensure(ctx) }

// Stop asks the embedded manager to exit, which stops every unit it runs,
// waits for it to be gone (killing it after timeout) and removes its cgroups.
// Stopping a manager that is not running is not an error.
func (e *Embedded) Stop(ctx context.Context, timeout time.Duration) error {
	b := e.boot()
	pid := b.PID()
	if pid == 0 && !b.Running() {
		b.Halt(0, timeout)
		return nil
	}
	if c, err := Dial(ctx, e.Target()); err == nil {
		// exit.target stops every unit as a stop job does (ExecStop=,
		// ExecStopPost=), then the manager exits; Exit alone ("systemctl
		// --force exit") skips the units' stop commands.
		if _, err := c.StartUnit(ctx, "exit.target", "replace-irreversibly"); err != nil {
			c.Exit(ctx)
		}
		c.Close()
	}
	b.Halt(pid, timeout)
	return nil
}
