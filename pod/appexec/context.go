package appexec

import (
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

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/unit/exit"
)

// A Context is the context an app's commands run in, its names resolved
// on the host: whom they run as, and with what environment.
type Context struct {
	app  *App
	cred *syscall.Credential // nil: the caller's own, root's
	env  []string
}

// Resolve returns a's context: its user and group, resolved on the host
// (also for an app with a rootfs, as systemd's User= resolved them), with
// the user's supplementary groups, as systemd's User= gives them, and its
// environment ([Environment]).
func Resolve(a *App) (*Context, error) {
	cred, ids, err := identity(a)
	if err != nil {
		return nil, err
	}
	return &Context{app: a, cred: cred, env: Environment(a, ids)}, nil
}

// Env is the environment of the commands that run in c ([Environment]).
func (c *Context) Env() []string { return c.env }

// Exec executes argv in c, replacing this process: it enters the app's
// rootfs (checked again: it may have been replaced by a link to / since
// the pod's creation), changes to its workingDir (made first, in an
// image's root, if it does not exist; / if it has none), looks argv[0] up in the
// app's PATH within that root, as a container runtime looks it up, drops
// from the bounding set every capability the app does not keep, sets
// no_new_privs if the app has noNewPrivileges, takes the app's groups and
// user, and executes the command. It returns only if it
// could not, with why, as a message for the app's record: an error
// wrapping exec.ErrNotFound for a command that does not exist (exit
// status 127), else one that exit.ExecFailed tells (126) where the
// command exists but cannot be executed.
func (c *Context) Exec(argv []string) error {
	// The bounding set that boundCapabilities drops is the calling
	// thread's: the exec must come from that same thread, or the command
	// starts with another thread's, root's whole set. Never unlocked: the
	// process becomes the command or ends.
	runtime.LockOSThread()
	a := c.app
	dir := a.WorkingDir
	if a.Rootfs != "" {
		if err := CheckRootfs(a.Rootfs); err != nil {
			return fmt.Errorf("rootfs %s: %w", a.Rootfs, err)
		}
		if err := syscall.Chroot(a.Rootfs); err != nil {
			return fmt.Errorf("rootfs %s: %v", a.Rootfs, UnwrapPath(err))
		}
	}
	if dir == "" {
		// As a container runtime starts a container whose spec and
		// image name no working directory: not in the manager's own
		// directory (a user manager's is the user's home, which the
		// app's user may not even be allowed to read).
		dir = "/"
	}
	err := os.Chdir(dir)
	if errors.Is(err, fs.ErrNotExist) && a.Identity != nil {
		// Made in an image's root, root's, as a container runtime
		// makes a working directory its image lacks.
		if err = os.MkdirAll(dir, 0o755); err == nil {
			err = os.Chdir(dir)
		}
	}
	if err != nil {
		return fmt.Errorf("workingDir %s: %v", dir, UnwrapPath(err))
	}
	// Looked up before the credentials change, in the root the command
	// runs in.
	path, err := LookPath("/", argv[0], a.Env)
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
	// Set by the process itself, not only by systemd's NoNewPrivileges=,
	// which reaches the app's own command alone, not one that "unitrun
	// pod exec" runs in its context.
	if a.NoNewPrivileges {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("noNewPrivileges: %w", err)
		}
	}
	if cred := c.cred; cred != nil {
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
	err = syscall.Exec(path, argv, c.env)
	if errors.Is(err, syscall.ENOENT) {
		// The command exists (found above); its #! (or ELF)
		// interpreter does not: 127, as a shell gives. A #! one is
		// told as run tells it.
		if why := exit.CannotExecute(path); why != nil {
			return why
		}
		return fmt.Errorf("command %s: its interpreter does not exist: %w", argv[0], err)
	}
	return cannotExecute(argv[0], err)
}

// cannotExecute is the error of command name, which exists but cannot be
// executed for the reason errno: "command /x: exec format error" in the
// app's record, and, as run tells a command it finds so, "/x: cannot
// execute: exec format error" in its log (exit.NotExecuted takes the
// reason alone from a path error, not to name the command twice).
func cannotExecute(name string, errno error) error {
	return &fs.PathError{Op: "command", Path: name, Err: errno}
}

// CheckRootfs returns an error unless dir, an app's rootfs, is a
// directory other than the root directory: not /, and not a path that
// resolves to it, such as a symlink to / or a bind mount of it, in which
// a chroot would leave the app on the host's (or the isolated pod's)
// whole file system. The error is the rule dir breaks.
func CheckRootfs(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return errors.New("must be a directory: " + UnwrapPath(err).Error())
	}
	if !fi.IsDir() {
		return errors.New("must be a directory")
	}
	if root, err := os.Stat("/"); err != nil || os.SameFile(fi, root) {
		return errors.New("must be a directory other than /, and must not resolve to /")
	}
	return nil
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
		if n < len(CapabilityNames) {
			name = CapabilityNames[n]
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

// StandardPath is the PATH of a command whose env sets none, and where its
// name is looked up then, as container runtimes give it.
const StandardPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Environment is the environment a's commands run with: PATH (the
// standard one), HOSTNAME (the pod's host name), the variables of the
// user they run as (ids: USER, LOGNAME, HOME, as systemd's User= sets
// them; HOME alone for root), then a's env, which overrides them. Nothing
// of the manager's or of the service's own environment (INVOCATION_ID,
// MANAGERPID, XDG_RUNTIME_DIR, ...) is passed on.
func Environment(a *App, ids []string) []string {
	vars := map[string]string{"PATH": StandardPath}
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

// LookPath returns the path of the command that name, an app's or a
// probe's argv[0], stands for, seen from within the directory root: name
// itself if it holds a '/', else the first executable regular file of that
// name in the absolute directories of the PATH in env (else StandardPath),
// each resolved within root (its symlinks too, as if root were /). A name
// found nowhere is an error wrapping exec.ErrNotFound.
func LookPath(root, name string, env map[string]string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, ok := env["PATH"]
	if !ok {
		path = StandardPath
	}
	dir, err := os.Open(root)
	if err != nil {
		return "", fmt.Errorf("command %s: %v", name, UnwrapPath(err))
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
// the caller's own, root's) and the variables that systemd's User= would
// set ($USER, $LOGNAME, $HOME), with the user's supplementary groups.
func identity(a *App) (*syscall.Credential, []string, error) {
	if id := a.Identity; id != nil {
		// As a container runtime runs an image's user: HOME from the
		// image's passwd, no USER or LOGNAME.
		return &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: append([]uint32{}, id.Groups...)}, []string{"HOME=" + id.Home}, nil
	}
	cred, err := Credential(a)
	if err != nil || a.User == "" {
		return cred, nil, err
	}
	u, err := LookupUser(a.User)
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

// Credential is who a probe's or a hook's command of a runs as: a's user
// and group (the user's primary group if a has no group), without
// supplementary groups; nil, the caller's own, if a has neither.
func Credential(a *App) (*syscall.Credential, error) {
	if id := a.Identity; id != nil {
		return &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: []uint32{}}, nil
	}
	if a.User == "" && a.Group == "" {
		return nil, nil
	}
	uid, gid := uint64(syscall.Getuid()), uint64(syscall.Getgid())
	if a.User != "" {
		u, err := LookupUser(a.User)
		if err != nil {
			return nil, err
		}
		if uid, err = strconv.ParseUint(u.Uid, 10, 32); err != nil {
			return nil, err
		}
		if gid, err = strconv.ParseUint(u.Gid, 10, 32); err != nil {
			return nil, err
		}
	}
	if a.Group != "" {
		g, err := LookupGroup(a.Group)
		if err != nil {
			return nil, err
		}
		if gid, err = strconv.ParseUint(g.Gid, 10, 32); err != nil {
			return nil, err
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// NamesKnown reports whether a's user and group, if set, are in the user
// and group databases of this process's os/user: a static build's reads
// /etc/passwd and /etc/group alone, where NSS may know more names and
// ids (LDAP, systemd's dynamic users). The small hook binary has unitrun
// start a run whose names it does not know.
func NamesKnown(a *App) bool {
	if a.Identity != nil {
		return true
	}
	if a.User != "" {
		if _, err := user.Lookup(a.User); err != nil {
			if _, err := user.LookupId(a.User); err != nil {
				return false
			}
		}
	}
	if a.Group != "" {
		if _, err := user.LookupGroup(a.Group); err != nil {
			if _, err := user.LookupGroupId(a.Group); err != nil {
				return false
			}
		}
	}
	return true
}

// LookupUser finds a user by name or, failing that, by number. A number
// that no user has is a user all the same, as the kubelet runs any uid:
// with no name, group 0 and home /, as container runtimes run a uid that
// their image's passwd lacks.
func LookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			if !NumericID(name) {
				return nil, fmt.Errorf("user %s: no such user", name)
			}
			return &user.User{Uid: name, Gid: "0", HomeDir: "/"}, nil
		}
	}
	return u, nil
}

// LookupGroup finds a group by name or, failing that, by number; a number
// that no group has is a group all the same.
func LookupGroup(name string) (*user.Group, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		if g, err = user.LookupGroupId(name); err != nil {
			if !NumericID(name) {
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

// UnwrapPath drops the operation and path of a *fs.PathError, which the
// message names itself.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
