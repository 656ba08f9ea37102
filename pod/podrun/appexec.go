package podrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/pod"
)

// ExecApp is the main process of app's service, "unitrun pod exec-app P A": it
// waits out the back-off of a run that follows a restart ([WaitBackoff]),
// records that a run of app has started (state running, its start time,
// and one more restart if the run follows one), then pipes its output to
// a copier that keeps the log from filling its file system ([pod.LogCopy]),
// enters app's rootfs, changes to its workingDir, takes its group and user, and executes its
// command, which replaces it. It returns only if the command could not be
// executed: an *exec.Error, wrapping exec.ErrNotFound for a command that
// does not exist, whose reason is also left for reap-app to record with
// the run's exit ([ReapApp]).
//
// The service itself has no User=, Group=, WorkingDirectory= or
// RootDirectory=: systemd 252 applies them to its "+" hooks too, so a user
// that does not resolve or a directory that does not exist would fail the
// hooks that record the run, and the run would end unrecorded.
func ExecApp(stateDir, name, app string) error {
	_, a, err := pod.LoadApp(stateDir, name, app)
	if err != nil {
		return err
	}
	if err := WaitBackoff(context.Background(), stateDir, name, app); err != nil {
		return err
	}
	// Opened before the credentials change, so that a failure after it
	// is recorded too; the command's exec closes it.
	why, err := pod.OpenStartError(stateDir, name, app)
	if err != nil {
		return err
	}
	defer why.Close()
	if err := beginRun(stateDir, name, a); err != nil {
		return err
	}
	if a.TerminationMessagePath != "" {
		if err := pod.EmptyTerminationFile(stateDir, name, app); err != nil {
			return err
		}
	}
	err = execApp(a, a.Exec, true)
	fmt.Fprintln(why, err.Error())
	return &exec.Error{Name: a.Exec[0], Err: err}
}

// beginRun records that a run of app a has started: ready at once if a
// has no startup or readiness probe, else once they say so, and an init
// app once it has succeeded; the probes (RunProbe) start from this run's
// start.
func beginRun(stateDir, name string, a *pod.App) error {
	return updateApp(stateDir, name, a.Name, func(s *pod.AppStatus) error {
		if s.State == pod.AppRestarting {
			s.Restarts++
		}
		s.State, s.StartedAt, s.FinishedAt = pod.AppRunning, time.Now(), time.Time{}
		s.PID = os.Getpid()
		s.Ready = !a.Init && a.StartupProbe == nil && a.ReadinessProbe == nil
		s.Startup, s.Readiness = nil, nil
		return nil
	})
}

// execApp sets up the process as app a asks and executes argv: a's
// command, or one that "unitrun pod exec" runs in a's context ([ExecIn]),
// after piping the output to the log's copier if log. It returns why it
// could not, as a message for the app's record: an error wrapping
// exec.ErrNotFound if the command does not exist.
func execApp(a *pod.App, argv []string, log bool) error {
	// The bounding set that boundCapabilities drops is the calling
	// thread's: the exec must come from that same thread, or the command
	// starts with another thread's, root's whole set. Never unlocked: the
	// process becomes the command or ends.
	runtime.LockOSThread()
	cred, ids, err := identity(a)
	if err != nil {
		return err
	}
	// Before the chroot: names resolve on the host.
	env := environment(a, ids)
	if log {
		if err := pipeOutput(); err != nil {
			return fmt.Errorf("output: %w", err)
		}
	}
	dir := a.WorkingDir
	if a.Rootfs != "" {
		// Checked at pod create too; the directory may have been
		// replaced since by a link to /.
		if err := checkRootfs(a.Rootfs); err != nil {
			return fmt.Errorf("rootfs %s: %w", a.Rootfs, err)
		}
		if err := syscall.Chroot(a.Rootfs); err != nil {
			return fmt.Errorf("rootfs %s: %v", a.Rootfs, unwrapPath(err))
		}
		if dir == "" {
			dir = "/"
		}
	}
	if dir != "" {
		if err := os.Chdir(dir); err != nil {
			return fmt.Errorf("workingDir %s: %v", dir, unwrapPath(err))
		}
	}
	// Looked up before the credentials change, in the root the command
	// runs in, as a container runtime looks it up.
	path, err := lookPath("/", argv[0], a.Env)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return notFound{name: argv[0]}
	} else if err == nil && fi.IsDir() {
		return cannotExecute(argv[0], syscall.EISDIR)
	}
	// Before the user changes: dropping from the bounding set takes
	// CAP_SETPCAP, and leaves the capabilities held until the exec.
	if err := boundCapabilities(a.Capabilities); err != nil {
		return err
	}
	// systemd's NoNewPrivileges= set it for the app's own command.
	if a.NoNewPrivileges {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("noNewPrivileges: %w", err)
		}
	}
	if cred != nil {
		if err := syscall.Setgroups(intIDs(cred.Groups)); err != nil {
			return fmt.Errorf("supplementary groups: %w", err)
		}
		if err := syscall.Setgid(int(cred.Gid)); err != nil {
			return fmt.Errorf("group %d: %w", cred.Gid, err)
		}
		if err := syscall.Setuid(int(cred.Uid)); err != nil {
			return fmt.Errorf("user %d: %w", cred.Uid, err)
		}
	}
	err = syscall.Exec(path, argv, env)
	if errors.Is(err, syscall.ENOENT) {
		// The command exists (found above); its #! (or ELF)
		// interpreter does not: 127, as a shell gives. A #! one is
		// told as run tells it.
		if why := job.CannotExecute(path); why != nil {
			return why
		}
		return fmt.Errorf("command %s: its interpreter does not exist: %w", argv[0], err)
	}
	return cannotExecute(argv[0], err)
}

// cannotExecute is the error of command name, which exists but cannot be
// executed for the reason errno: "command /x: exec format error" in the
// app's record, and, as run tells a command it finds so, "/x: cannot
// execute: exec format error" in its log (job.NotExecuted takes the
// reason alone from a path error, not to name the command twice).
func cannotExecute(name string, errno error) error {
	return &fs.PathError{Op: "command", Path: name, Err: errno}
}

// boundCapabilities drops from the bounding set every capability not in
// keep, unless keep is nil: a command executed as root then holds only
// those in keep.
func boundCapabilities(keep []string) error {
	if keep == nil {
		return nil
	}
	// Also those newer than CapabilityNames, up to the kernel's last.
	for n := range 64 {
		name := fmt.Sprintf("capability %d", n)
		if n < len(pod.CapabilityNames) {
			name = pod.CapabilityNames[n]
		}
		if slices.Contains(keep, name) {
			continue
		}
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(n), 0, 0, 0)
		if err == unix.EINVAL { // past the kernel's last capability
			return nil
		}
		if err != nil {
			return fmt.Errorf("capabilities: drop %s: %w", name, err)
		}
	}
	return nil
}

// standardPath is the PATH of a command whose env sets none, and where its
// name is looked up then, as container runtimes give it.
const standardPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// environment is the environment a's command runs with: PATH (the
// standard one), HOSTNAME (the pod's host name), the variables of the
// user it runs as (ids: USER, LOGNAME, HOME, as systemd's User= sets them;
// HOME alone for root), then a's env, which overrides them. Nothing of
// the manager's or of the service's own environment (INVOCATION_ID,
// MANAGERPID, XDG_RUNTIME_DIR, ...) is passed on.
func environment(a *pod.App, ids []string) []string {
	vars := map[string]string{"PATH": standardPath}
	if h, err := os.Hostname(); err == nil {
		vars["HOSTNAME"] = h
	}
	if ids == nil {
		if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil {
			ids = []string{"HOME=" + u.HomeDir}
		}
	}
	for _, kv := range ids {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	maps.Copy(vars, a.Env)
	env := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// notFound is the error of a command that does not exist; it is
// exec.ErrNotFound.
type notFound struct {
	name string
	// path is the PATH a command name was looked up in; "" for a path.
	path string
}

func (e notFound) Error() string {
	if e.path != "" {
		return fmt.Sprintf("command %s: executable file not found in $PATH (%s)", e.name, e.path)
	}
	return "command " + e.name + ": not found"
}

func (notFound) Is(target error) bool { return target == exec.ErrNotFound }

// lookPath returns the path of the command that name, an app's or a
// probe's argv[0], stands for, seen from within the directory root: name
// itself if it holds a '/', else the first executable regular file of that
// name in the absolute directories of the PATH in env (else standardPath),
// each resolved within root (its symlinks too, as if root were /). A name
// found nowhere is a notFound error.
func lookPath(root, name string, env map[string]string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, ok := env["PATH"]
	if !ok {
		path = standardPath
	}
	dir, err := os.Open(root)
	if err != nil {
		return "", fmt.Errorf("command %s: %v", name, unwrapPath(err))
	}
	defer dir.Close()
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if executableIn(dir, p) {
			return p, nil
		}
	}
	return "", notFound{name: name, path: path}
}

// executableIn reports whether path, resolved within the directory root,
// is a regular file that someone may execute.
func executableIn(root *os.File, path string) bool {
	fd, err := unix.Openat2(int(root.Fd()), path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT,
	})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0
}

// identity returns the credential a's command runs with (nil to keep
// unitrun's own, root's) and the variables that systemd's User= would set
// ($USER, $LOGNAME, $HOME), with the user's supplementary groups, as
// systemd's User= gives them. Names resolve on the host, also for an app
// with a rootfs, as systemd's User= resolved them.
func identity(a *pod.App) (*syscall.Credential, []string, error) {
	cred, err := credential(a)
	if err != nil || a.User == "" {
		return cred, nil, err
	}
	u, err := lookupUser(a.User)
	if err != nil {
		return nil, nil, err
	}
	if u.Username == "" {
		// A uid without an entry has no name and no groups of its own.
		return cred, []string{"HOME=" + u.HomeDir}, nil
	}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, nil, fmt.Errorf("user %s: supplementary groups: %w", a.User, err)
	}
	for _, g := range gids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("user %s: group id %q: %w", a.User, g, err)
		}
		cred.Groups = append(cred.Groups, uint32(n))
	}
	return cred, []string{"USER=" + u.Username, "LOGNAME=" + u.Username, "HOME=" + u.HomeDir}, nil
}

// lookupUser finds a user by name or, failing that, by number. A number
// that no user has is a user all the same, as the kubelet runs any uid:
// with no name, group 0 and home /, as container runtimes run a uid that
// their image's passwd lacks.
func lookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			if !pod.NumericID(name) {
				return nil, fmt.Errorf("user %s: no such user", name)
			}
			return &user.User{Uid: name, Gid: "0", HomeDir: "/"}, nil
		}
	}
	return u, nil
}

// lookupGroup finds a group by name or, failing that, by number; a number
// that no group has is a group all the same.
func lookupGroup(name string) (*user.Group, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		if g, err = user.LookupGroupId(name); err != nil {
			if !pod.NumericID(name) {
				return nil, fmt.Errorf("group %s: no such group", name)
			}
			return &user.Group{Gid: name}, nil
		}
	}
	return g, nil
}

func intIDs(ids []uint32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// unwrapPath drops the operation and path of a *fs.PathError, which the
// message names itself.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
