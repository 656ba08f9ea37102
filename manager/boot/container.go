package boot

import (
	"context"
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
)

// Container is a systemd system manager running as PID 1 of new PID, mount,
// UTS and IPC namespaces, as rkt's stage1 ran a pod. It starts Target and
// the units it pulls in, found in UnitPath and then in a small set of base
// units unitrun writes (sysinit, basic, shutdown, poweroff, halt, reboot and
// exit targets). The host's own units are never in its path: they would
// pull in boot services such as systemd-tmpfiles-setup, which empties /tmp,
// and the container shares the host's file system. Dir, a host directory,
// is its /run, so its files (the private socket Dir/systemd/private among
// them) are visible from the host; but systemd answers only peers inside its
// PID namespace, so clients run through Command.
//
// A Container either runs in cgroups of its own, made at the root of each
// hierarchy and removed by Stop, or, Delegated, in the caller's cgroup: that
// of a service with Delegate=yes, which then holds the whole container, so
// its manager sees, stops and accounts it as one unit.
type Container struct {
	Dir      string   // host directory mounted as the container's /run
	Target   string   // unit to start at boot
	UnitPath []string // the container manager's unit search path
	Hostname string   // hostname in the new UTS namespace
	// Binds are host paths, directories or files, that the container sees
	// at the same path even where its own /run hides them (a state
	// directory or a binary under /run).
	Binds []string
	// NoNetwork puts the container in a new network namespace, where it has
	// only the loopback device (systemd brings it up at boot).
	NoNetwork bool
	// Delegated keeps the container in the caller's cgroup.
	Delegated bool
	// Roots are directories, root directories of services inside, into
	// which the container binds its own /proc, /dev and /sys (creating the
	// mount points), as a container runtime mounts them into an image. The
	// mounts exist only in the container's mount namespace.
	Roots []string
	// Overlays are mounted in the container's mount namespace before
	// anything is bound into Roots (one of which each Root usually is):
	// they go with the namespace, whatever ends the container.
	Overlays []Overlay

	cmd    *exec.Cmd
	exited chan error
	ready  chan struct{} // closed when systemd sends READY=1
	pid    int
}

// An Overlay is an overlayfs mount of read-only layers, Lower (top
// first; directories of one parent, each a name without ':' or ','), and a
// writable layer Upper, with its work directory Work, at Root.
type Overlay struct {
	Root, Upper, Work string
	Lower             []string
}

// Options returns o's mount options, its lower layers relative to their
// parent directory, which it returns too: the options of a mount are at
// most a page, which 60 layers named by absolute path could fill.
func (o Overlay) Options() (dir, opts string, err error) {
	if len(o.Lower) == 0 {
		return "", "", errors.New("overlay " + o.Root + ": no layers")
	}
	dir = filepath.Dir(o.Lower[0])
	names := make([]string, len(o.Lower))
	for i, l := range o.Lower {
		names[i] = filepath.Base(l)
		if filepath.Dir(l) != dir || strings.ContainsAny(l, ":,") {
			return "", "", fmt.Errorf("overlay %s: layer %s is not a directory of %s, or holds ':' or ','", o.Root, l, dir)
		}
	}
	for _, p := range []string{o.Upper, o.Work} {
		if strings.ContainsAny(p, ":,") {
			return "", "", fmt.Errorf("overlay %s: %s holds ':' or ','", o.Root, p)
		}
	}
	opts = "lowerdir=" + strings.Join(names, ":") + ",upperdir=" + o.Upper + ",workdir=" + o.Work
	if len(opts) >= maxMountOptions {
		return "", "", fmt.Errorf("overlay %s: %d layers make %d bytes of mount options, more than the %d a mount takes", o.Root, len(o.Lower), len(opts), maxMountOptions-1)
	}
	return dir, opts, nil
}

// maxMountOptions is the size of the page a mount's options are copied
// into, their NUL included.
const maxMountOptions = 4096

// Check returns an error if o cannot be mounted as it is: its layers
// are not in one directory, a path holds ':' or ',', or its options are
// more than a mount takes.
func (o Overlay) Check() error {
	_, _, err := o.Options()
	return err
}

// notifySocket is the socket, in Dir, that the container's systemd sends
// its sd_notify messages to: READY=1 once it has booted.
const notifySocket = "unitrun-notify"

// containerUnits are the base units of a container manager: the targets
// that services depend on by default, left empty, and the ways out. Each way
// out is a target whose service ends the manager once everything else has
// stopped (shutdown.target conflicts with every default service).
var containerUnits = map[string]string{
	"sysinit.target":           "[Unit]\nDescription=System Initialization (unitrun container)\nDefaultDependencies=no\n",
	"basic.target":             "[Unit]\nDescription=Basic System (unitrun container)\nRequires=sysinit.target\nAfter=sysinit.target\n",
	"shutdown.target":          "[Unit]\nDescription=Shutdown (unitrun container)\nDefaultDependencies=no\nRefuseManualStart=yes\n",
	"poweroff.target":          wayOut("Power-Off", "systemd-poweroff.service"),
	"halt.target":              wayOut("Halt", "systemd-halt.service"),
	"reboot.target":            wayOut("Reboot", "systemd-reboot.service"),
	"exit.target":              wayOut("Exit", "systemd-exit.service"),
	"systemd-poweroff.service": endService("poweroff-force"),
	"systemd-halt.service":     endService("halt-force"),
	"systemd-reboot.service":   endService("reboot-force"),
	"systemd-exit.service":     endService("exit-force"),
}

func wayOut(what, service string) string {
	return "[Unit]\nDescription=" + what + " (unitrun container)\nDefaultDependencies=no\nRequires=" + service + "\nAfter=" + service + "\nAllowIsolate=yes\n"
}

func endService(action string) string {
	return "[Unit]\nDescription=End the unitrun container manager\nDefaultDependencies=no\nRequires=shutdown.target\nAfter=shutdown.target\nSuccessAction=" + action + "\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n"
}

// containerScript runs in the new namespaces as PID 1 and becomes systemd.
// systemd sets the hostname from /etc/hostname at boot, so the container's
// own hostname is mounted over it. Its log, and the output of services
// that go to the console, go to Dir/unitrun-manager.log, mounted over
// /dev/console, rather than to the host's console.
// Values arrive as arguments, never inside the script text.
//
// The binds are mounted inside Dir first, while their host paths are still
// visible, come along with Dir (a recursive bind) and are moved into place.
const containerScript = `set -e
dir=$1; hostname=$2; systemd=$3; target=$4; nbinds=$5; shift 5
i=0
while [ "$i" -lt "$nbinds" ]; do
	eval "b=\${$((i + 1))}"
	if [ -d "$b" ]; then mkdir -p "$dir/unitrun-binds/$i"; else mkdir -p "$dir/unitrun-binds"; touch "$dir/unitrun-binds/$i"; fi
	mount --bind "$b" "$dir/unitrun-binds/$i"
	i=$((i + 1))
done
printf '%s\n' "$hostname" > "$dir/unitrun-hostname"
mount --bind "$dir/unitrun-hostname" /etc/hostname
mount --bind "$dir/unitrun-manager.log" /dev/console
mount --rbind "$dir" /run
i=0
while [ "$i" -lt "$nbinds" ]; do
	eval "b=\${$((i + 1))}"
	if [ -d "/run/unitrun-binds/$i" ]; then mkdir -p "$b"; else mkdir -p "$(dirname "$b")"; [ -e "$b" ] || touch "$b"; fi
	mount --move "/run/unitrun-binds/$i" "$b"
	i=$((i + 1))
done
shift "$nbinds"
noverlays=$1; shift
i=0
while [ "$i" -lt "$noverlays" ]; do
	eval "r=\${$((i * 3 + 1))} d=\${$((i * 3 + 2))} o=\${$((i * 3 + 3))}"
	cd "$d"; mount -t overlay overlay -o "$o" "$r"
	i=$((i + 1))
done
cd /
shift $((noverlays * 3))
nroots=$1; shift
i=0
while [ "$i" -lt "$nroots" ]; do
	eval "r=\${$((i + 1))}"
	for fs in proc dev sys; do mkdir -p "$r/$fs"; mount --rbind "/$fs" "$r/$fs"; done
	i=$((i + 1))
done
shift "$nroots"
for procs in "$@"; do echo 0 > "$procs"; done
mkdir -p /run/systemd/system
hostname "$hostname"
exec "$systemd" --unit="$target" --log-target=console --log-level=notice`

// Boot starts the container manager and waits until it has finished
// booting.
func (c *Container) Boot(ctx context.Context) error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.WaitBooted(ctx)
}

// Start starts the container manager and returns once its systemd has a
// process (PID returns it), without waiting for its boot. Its output goes
// to Dir/unitrun-manager.log.
func (c *Container) Start() error {
	if c.cmd != nil {
		return errors.New("container manager: already started")
	}
	for _, o := range c.Overlays {
		if err := o.Check(); err != nil {
			return fmt.Errorf("container manager: %w", err)
		}
	}
	systemd, err := findSystemd()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("container manager: %w", err)
	}
	base := filepath.Join(c.Dir, "unitrun-units")
	if err := writeUnits(base, containerUnits); err != nil {
		return fmt.Errorf("container manager: %w", err)
	}
	env, err := managerEnv(filepath.Join(c.Dir, "unitrun-no-generators"))
	if err != nil {
		return fmt.Errorf("container manager: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, "unitrun-manager.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("container manager: %w", err)
	}
	defer logf.Close()
	notify, err := listenNotify(filepath.Join(c.Dir, notifySocket))
	if err != nil {
		return fmt.Errorf("container manager: %w", err)
	}
	c.cmd = c.command(systemd, base, env)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		notify.Close()
		return fmt.Errorf("container manager: unshare: %w", err)
	}
	c.exited = make(chan error, 1)
	go func() {
		err := c.cmd.Wait()
		notify.Close()
		c.exited <- err
	}()
	c.ready = make(chan struct{})
	go readNotify(notify, c.ready)
	return c.waitPID()
}

// command returns the unshare command that boots systemd in new
// namespaces (containerScript), with env, and base last in its unit path.
func (c *Container) command(systemd, base string, env []string) *exec.Cmd {
	hostname := c.Hostname
	if hostname == "" {
		hostname = "unitrun"
	}
	args := []string{"--pid", "--fork", "--mount", "--propagation", "private", "--mount-proc", "--uts", "--ipc"}
	if c.NoNetwork {
		args = append(args, "--net")
	}
	args = append(args, "/bin/sh", "-c", containerScript, "unitrun-container", c.Dir, hostname, systemd, c.Target, strconv.Itoa(len(c.Binds)))
	args = append(args, c.Binds...)
	args = append(args, strconv.Itoa(len(c.Overlays)))
	for _, o := range c.Overlays {
		dir, opts, _ := o.Options() // checked by Start
		args = append(args, o.Root, dir, opts)
	}
	args = append(args, strconv.Itoa(len(c.Roots)))
	args = append(args, c.Roots...)
	if !c.Delegated {
		args = append(args, makeCgroups(cgroupFor(c.Dir))...)
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(env,
		"container=unitrun",
		"SYSTEMD_UNIT_PATH="+strings.Join(append(append([]string{}, c.UnitPath...), base), ":"),
		"NOTIFY_SOCKET=/run/"+notifySocket,
	)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// waitPID waits until unshare has forked the container's systemd and
// keeps its pid, or reports that the manager exited first.
func (c *Container) waitPID() error {
	for c.pid == 0 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", c.cmd.Process.Pid, c.cmd.Process.Pid))
		if f := strings.Fields(string(b)); len(f) > 0 {
			c.pid, _ = strconv.Atoi(f[0])
			break
		}
		if err := c.pause(context.Background()); err != nil {
			return err
		}
	}
	return nil
}

// WaitBooted waits until the container manager has finished booting, which
// it reports with sd_notify's READY=1 once the start job of Target and of
// all it pulls in are done. It fails if the manager exits first, and kills
// it if ctx ends first. It runs nothing inside the container: a process
// entered from outside (Command) that is running when the manager shuts
// down stops for good at systemd-shutdown's SIGSTOP, with nsenter, its
// parent outside, stopped with it, and the namespace never ends.
func (c *Container) WaitBooted(ctx context.Context) error {
	if c.ready == nil {
		return errors.New("container manager: not started")
	}
	for {
		select {
		case <-c.ready:
			return nil
		default:
		}
		if err := c.pause(ctx); err != nil {
			return err
		}
	}
}

// listenNotify opens a socket at path for sd_notify's messages (the
// NOTIFY_SOCKET of a container's systemd or of the embedded journald).
func listenNotify(path string) (*net.UnixConn, error) {
	os.Remove(path)
	return net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
}

// readNotify closes ready at the first READY=1 that conn receives, and
// reads until conn is closed.
func readNotify(conn *net.UnixConn, ready chan struct{}) {
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(buf[:n]), "\n") {
			if line == "READY=1" && ready != nil {
				close(ready)
				ready = nil
			}
		}
	}
}

// Wait waits for the container manager to exit and returns how unshare,
// its parent, exited.
func (c *Container) Wait() error {
	if c.cmd == nil {
		return errors.New("container manager: not started")
	}
	err := <-c.exited
	c.exited <- err
	return err
}

// Signal sends sig to the container's systemd: SIGRTMIN+3 halts it,
// SIGRTMIN+4 powers it off (systemd(1)), each stopping every unit first.
func (c *Container) Signal(sig syscall.Signal) error {
	if c.pid == 0 {
		return errors.New("container manager: not started")
	}
	return syscall.Kill(c.pid, sig)
}

// pause waits a little, or reports that the manager exited or ctx ended.
func (c *Container) pause(ctx context.Context) error {
	select {
	case err := <-c.exited:
		c.exited <- err
		b, _ := os.ReadFile(filepath.Join(c.Dir, "unitrun-manager.log"))
		return fmt.Errorf("container manager exited while booting (%v): %s", err, strings.TrimSpace(string(b)))
	case <-ctx.Done():
		c.cmd.Process.Kill()
		return ctx.Err()
	case <-time.After(10 * time.Millisecond):
		return nil
	}
}

// PID returns the host process id of the container's systemd, or 0.
func (c *Container) PID() int { return c.pid }

// Command returns a command that runs inside the container's namespaces,
// where its systemd is PID 1 and reachable as the system manager.
func (c *Container) Command(name string, args ...string) *exec.Cmd {
	return EnterCommand(c.pid, name, args...)
}

// EnterCommand returns a command that runs inside the namespaces of the
// container whose systemd has host process id pid (also its network
// namespace, if it has one of its own).
func EnterCommand(pid int, name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(pid), "-m", "-p", "-u", "-i", "-n", "--", name}, args...)...)
}

// Stop powers the container off (SIGRTMIN+4 to its systemd, which stops
// every unit), waits for it to exit, killing it after timeout, and removes
// its cgroups.
func (c *Container) Stop(timeout time.Duration) error {
	if c.cmd == nil {
		return nil
	}
	if c.pid != 0 {
		syscall.Kill(c.pid, syscall.Signal(34+4)) // SIGRTMIN+4: poweroff
	}
	var err error
	select {
	case err = <-c.exited:
	case <-time.After(timeout):
		if c.pid != 0 {
			syscall.Kill(c.pid, syscall.SIGKILL)
		}
		err = <-c.exited
	}
	c.exited <- err
	if !c.Delegated {
		removeCgroups(cgroupFor(c.Dir))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // a powered-off manager exits as it likes
	}
	return err
}
