package boot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/internal/flock"
)

// Embedded is a systemd user manager that unitrun boots in a private mount
// namespace, with a session bus and a systemd-journald beside it, for hosts
// where no manager is reachable (containers, CI machines, tests). It lives
// in Dir, its XDG_RUNTIME_DIR: the private socket is Dir/systemd/private,
// the bus Dir/bus, the log Dir/manager.log, transient and runtime units
// under Dir/systemd, journald's sockets in Dir/journal and the journal that
// its units' output goes to in JournalDir. Once booted it outlives the
// process that booted it and is reused by later ones until it is asked to
// exit (manager.Embedded.Stop, which ends with Halt). It needs
// root (for the mount namespace).
type Embedded struct {
	Dir string
}

// Socket returns the path of the manager's private socket.
func (e *Embedded) Socket() string { return filepath.Join(e.Dir, "systemd", "private") }

// JournalDir returns the directory of the journal files that the embedded
// manager's journald writes: "journalctl --directory=" reads them.
func (e *Embedded) JournalDir() string { return filepath.Join(e.Dir, "log", "journal") }

// JournalSockets returns journald's runtime directory, where its sockets
// are (the manager's /run/systemd/journal).
func (e *Embedded) JournalSockets() string { return filepath.Join(e.Dir, "journal") }

// PID returns the process id of the running embedded manager, or 0.
func (e *Embedded) PID() int {
	b, err := os.ReadFile(filepath.Join(e.Dir, "manager.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0
	}
	return pid
}

// Running reports whether the manager answers on its private socket.
func (e *Embedded) Running() bool {
	c, err := net.DialTimeout("unix", e.Socket(), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// bootedFile is the file that boot writes once the manager is ready for
// units, and removes before it boots one.
func (e *Embedded) bootedFile() string { return filepath.Join(e.Dir, "booted") }

// Ensure boots the embedded manager unless it is running, and reports whether
// it booted it. Concurrent callers, in this process or others, boot one
// manager between them: the first takes Dir/lock, the others wait for it and
// find the manager running. A manager that answers on its private socket
// while another caller still boots it is not ready yet (see waitReady):
// without its booted file, Ensure waits for the lock.
// Only root may boot it: for another uid the error says so, and how to
// reach a manager instead.
func (e *Embedded) Ensure(ctx context.Context) (bool, error) {
	if _, err := os.Stat(e.bootedFile()); err == nil && e.Running() {
		return false, nil
	}
	if uid := os.Geteuid(); uid != 0 {
		// It boots in a mount namespace of its own, which only root may make.
		return false, fmt.Errorf("embedded manager: booting it needs root, and this is uid %d; as this user, reach a running manager instead: --manager user (your systemd --user), or --manager private:PATH (a manager's private socket)", uid)
	}
	if err := os.MkdirAll(e.Dir, 0o755); err != nil {
		return false, fmt.Errorf("embedded manager: %w", err)
	}
	unlock, err := flock.Lock(ctx, filepath.Join(e.Dir, "lock"))
	if err != nil {
		return false, fmt.Errorf("embedded manager: %w", err)
	}
	defer unlock()
	if e.Running() {
		return false, nil
	}
	return true, e.boot(ctx)
}

// bootScript runs in the new mount namespace: it moves itself into the
// manager's cgroups, gives the manager a /run/systemd of its own, starts a
// systemd-journald there and becomes systemd. journald keeps its sockets in
// Dir/journal (as /run/systemd/journal), its journal files in Dir/log (as
// /run/log, volatile storage) and reads the invocation IDs of the units
// from the manager's Dir/systemd/units (as /run/systemd/units, where
// journald looks for them). The units' output reaches it as it does on a
// host: their stdout and stderr are streams to /run/systemd/journal/stdout.
// journald and systemd start side by side; boot returns once the manager
// answers and journald has said READY=1 (sd_notify, to notify), before any
// unit of a caller starts, so no unit's output is lost. journald's socket
// file appears at bind(2), before listen(2), and systemd connects a unit's
// stdout to a socket that refuses it to /dev/null, so the socket's file
// alone is not the sign. Paths arrive as arguments, never inside the
// script text.
const bootScript = `set -e
systemd=$1; journald=$2; dir=$3; conf=$4; notify=$5; shift 5
for procs in "$@"; do echo $$ > "$procs"; done
mkdir -p /run/systemd /run/log
mount -t tmpfs -o mode=0755 unitrun /run/systemd
mkdir -p /run/systemd/system /run/systemd/journald.conf.d
ln -s "$dir/journal" /run/systemd/journal
ln -s "$dir/systemd/units" /run/systemd/units
mount --bind "$dir/log" /run/log
printf '%s' "$conf" >/run/systemd/journald.conf.d/zz-unitrun-embedded.conf
NOTIFY_SOCKET="$notify" "$journald" </dev/null >"$dir/journald.log" 2>&1 &
echo $! >"$dir/journald.pid"
exec "$systemd" --user --log-target=console --log-level=notice`

// journaldConf is the embedded journald's configuration: a volatile
// journal, no rate limit (a unit's output is never dropped), nothing read
// from the kernel or audit, nothing forwarded to the host's syslog,
// console or terminals.
const journaldConf = `[Journal]
Storage=volatile
RateLimitIntervalSec=0
RateLimitBurst=0
ReadKMsg=no
Audit=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
`

// baseUnits are the units the embedded manager needs beyond its transient
// ones: a default target that starts the session bus, and the bus itself
// (socket-activated, so the manager registers on it as systemd expects).
// basic.target, exit.target and the slices come from the installed user units.
var baseUnits = map[string]string{
	"default.target": `[Unit]
Description=unitrun embedded manager
Wants=dbus.socket
`,
	"dbus.socket": `[Unit]
Description=D-Bus session bus of the unitrun embedded manager

[Socket]
ListenStream=%t/bus
`,
	"dbus.service": `[Unit]
Description=D-Bus session bus of the unitrun embedded manager
Requires=dbus.socket

[Service]
Type=notify
NotifyAccess=main
ExecStart=/usr/bin/dbus-daemon --session --address=systemd: --nofork --nopidfile --systemd-activation --syslog-only
`,
}

func (e *Embedded) boot(ctx context.Context) error {
	systemd, err := findSystemd()
	if err != nil {
		return err
	}
	journald := filepath.Join(filepath.Dir(systemd), "systemd-journald")
	unitDir := filepath.Join(e.Dir, "units")
	if err := writeUnits(unitDir, baseUnits); err != nil {
		return fmt.Errorf("embedded manager: %w", err)
	}
	runtimeUnits := filepath.Join(e.Dir, "systemd", "user")
	for _, dir := range []string{runtimeUnits, filepath.Join(e.Dir, "journal"), filepath.Join(e.Dir, "log")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("embedded manager: %w", err)
		}
	}
	os.Remove(e.bootedFile())
	// A journald left by a manager that died would write the same files.
	e.stopJournald(5 * time.Second)
	logf, err := os.OpenFile(filepath.Join(e.Dir, "manager.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("embedded manager: %w", err)
	}
	defer logf.Close()

	// sd_notify takes an absolute path alone.
	notifyPath, err := filepath.Abs(filepath.Join(e.Dir, "journald-notify"))
	if err != nil {
		return fmt.Errorf("embedded manager: %w", err)
	}
	notify, err := listenNotify(notifyPath)
	if err != nil {
		return fmt.Errorf("embedded manager: %w", err)
	}
	defer notify.Close()
	journaldReady := make(chan struct{})
	go readNotify(notify, journaldReady)

	procs := makeCgroups(e.Cgroup())
	// A mount namespace of its own, a slave of the host's: the manager's
	// /run/systemd stays its own, and what the host mounts later on a
	// shared mount (systemd makes / shared) reaches its units too.
	// (Go's Unshareflags would make it private, cut off from the host.)
	args := append([]string{"--mount", "--propagation", "slave", "/bin/sh", "-c", bootScript, "unitrun-manager", systemd, journald, e.Dir, journaldConf, notifyPath}, procs...)
	cmd := exec.Command("unshare", args...)
	env, err := managerEnv(filepath.Join(e.Dir, "generators"))
	if err != nil {
		return fmt.Errorf("embedded manager: %w", err)
	}
	cmd.Env = append(env,
		"HOME="+homeDir(),
		"XDG_RUNTIME_DIR="+e.Dir,
		// The transient directory must be in the path, or a daemon-reload
		// turns every transient unit into not-found.
		"SYSTEMD_UNIT_PATH="+strings.Join([]string{filepath.Join(e.Dir, "systemd", "transient"), runtimeUnits, unitDir, "/usr/lib/systemd/user", "/lib/systemd/user"}, ":"),
	)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("embedded manager: start %s: %w", systemd, err)
	}
	// Wait reaps the manager whenever it exits, so it never lingers as a
	// zombie of this process.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := atomicfile.Write(filepath.Join(e.Dir, "manager.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		cmd.Process.Kill()
		return fmt.Errorf("embedded manager: %w", err)
	}
	if err := e.waitReady(ctx, cmd.Process, exited, journaldReady); err != nil {
		return err
	}
	if err := atomicfile.Write(e.bootedFile(), nil, 0o644); err != nil {
		return fmt.Errorf("embedded manager: %w", err)
	}
	return nil
}

// waitReady waits until the manager answers on its private socket, its
// journald has said READY=1 and the manager is on its session bus, for
// 15 s at most; it kills the manager (proc) and its journald if they do
// not get there or ctx ends first. The manager joins the bus a moment
// after it answers on its socket, and until it has, it cannot keep a unit
// for its caller (AddRef=yes): a caller killed then would leave its unit
// loaded for good.
func (e *Embedded) waitReady(ctx context.Context, proc *os.Process, exited chan error, journaldReady chan struct{}) error {
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for !e.Running() || !closed(journaldReady) || !e.onBus() {
		select {
		case err := <-exited:
			return fmt.Errorf("embedded manager exited while booting (%v): %s", err, e.logTail())
		case <-deadline.C:
			proc.Kill()
			e.stopJournald(5 * time.Second)
			return fmt.Errorf("embedded manager did not open %s, its journald %s and its bus %s within 15s (see %s): %s",
				e.Socket(), filepath.Join(e.JournalSockets(), "stdout"), e.busSocket(), filepath.Join(e.Dir, "journald.log"), e.logTail())
		case <-ctx.Done():
			proc.Kill()
			e.stopJournald(5 * time.Second)
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// busSocket is the path of the manager's session bus.
func (e *Embedded) busSocket() string { return filepath.Join(e.Dir, "bus") }

// onBus reports whether the manager is on its session bus.
func (e *Embedded) onBus() bool {
	c, err := net.DialTimeout("unix", e.busSocket(), time.Second)
	if err != nil {
		return false
	}
	bus, err := dbus.NewConn(c)
	if err != nil {
		c.Close()
		return false
	}
	defer bus.Close()
	if bus.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}) != nil || bus.Hello() != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var there bool
	err = bus.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.systemd1").Store(&there)
	return err == nil && there
}

// Halt finishes the stop of the embedded manager, once it has been asked
// to exit (or is not running): it waits for pid to be gone (killing it
// after timeout), stops its journald and removes its cgroups.
func (e *Embedded) Halt(pid int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for pid != 0 && syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(5 * time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(filepath.Join(e.Dir, "manager.pid"))
	os.Remove(e.bootedFile())
	e.stopJournald(5 * time.Second)
	removeCgroups(e.Cgroup())
}

// stopJournald stops the manager's journald, once the manager is gone, with
// SIGTERM so that it closes its journal files cleanly (SIGKILL after
// timeout).
func (e *Embedded) stopJournald(timeout time.Duration) {
	pidFile := filepath.Join(e.Dir, "journald.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	// The comm check keeps a recycled pid safe; the kernel cuts it to 15 bytes.
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && pid > 0 && strings.TrimSpace(string(comm)) == "systemd-journal" {
		syscall.Kill(pid, syscall.SIGTERM)
		for deadline := time.Now().Add(timeout); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				deadline = time.Now().Add(5 * time.Second)
			}
		}
	}
	os.Remove(pidFile)
}

func (e *Embedded) logTail() string {
	b, _ := os.ReadFile(filepath.Join(e.Dir, "manager.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Cgroup is the name of the cgroup the embedded manager runs in, below the
// root of each hierarchy; one per Dir, so several embedded managers (one per
// test binary) never share cgroups.
//
// Its name ends in ".slice": journald names the unit that a process logs
// from after the slices that begin its cgroup path, so that the units'
// cgroups (NAME.slice/app.slice/UNIT) make their output UNIT's, with the
// invocation ID of its run (_SYSTEMD_UNIT, _SYSTEMD_INVOCATION_ID).
func (e *Embedded) Cgroup() string {
	return cgroupFor(e.Dir) + ".slice"
}

// cgroupFor names the cgroup of the manager that lives in dir.
func cgroupFor(dir string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return "unitrun-" + hex.EncodeToString(sum[:6])
}

// cgroupRoots returns the mount points of the cgroup hierarchies that
// systemd tracks processes in: the unified (v2) one and the named v1 one.
func cgroupRoots() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var roots []string
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		if g[0] == "cgroup2" || g[0] == "cgroup" && strings.Contains(","+g[2]+",", ",name=systemd,") {
			roots = append(roots, f[4])
		}
	}
	return roots
}

// makeCgroups creates the cgroup name in every hierarchy and returns their
// cgroup.procs files. Where cgroups cannot be written, the manager shares
// the caller's.
func makeCgroups(name string) []string {
	var procs []string
	for _, root := range cgroupRoots() {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			continue
		}
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	return procs
}

// removeCgroups kills what is left in the cgroup name (a manager that was
// killed leaves its children behind) and removes it and all below it in
// every hierarchy, deepest first.
func removeCgroups(name string) {
	for _, root := range cgroupRoots() {
		dir := filepath.Join(root, name)
		// cgroup.kill exists on the unified hierarchy (Linux 5.14 and later)
		// and kills the whole subtree.
		if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) == nil {
			for range 100 {
				if b, err := os.ReadFile(filepath.Join(dir, "cgroup.events")); err != nil || strings.Contains(string(b), "populated 0") {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		var dirs []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			os.Remove(dirs[i])
		}
	}
}

func findSystemd() (string, error) {
	for _, p := range []string{"/lib/systemd/systemd", "/usr/lib/systemd/systemd"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("embedded manager: no systemd binary at /lib/systemd/systemd or /usr/lib/systemd/systemd (install the systemd package)")
}

func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
