package podrun

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/pod"
)

// ExecApp is the main process of app's service, "unitrun pod exec P A": it
// records that a run of app has started (state running, its start time,
// and one more restart if the run follows one), then pipes its output to
// a copier that keeps the log from filling its file system ([LogCopy]),
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
	_, a, err := loadApp(stateDir, name, app)
	if err != nil {
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
	err = execApp(a)
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

// exec sets up the process as a asks and executes a's command; it returns
// why it could not, as a message for the app's record: an error wrapping
// exec.ErrNotFound if the command does not exist.
func execApp(a *pod.App) error {
	cred, env, err := identity(a)
	if err != nil {
		return err
	}
	if err := pipeOutput(); err != nil {
		return fmt.Errorf("output: %w", err)
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
	if fi, err := os.Stat(a.Exec[0]); errors.Is(err, fs.ErrNotExist) {
		return notFound(a.Exec[0])
	} else if err == nil && fi.IsDir() {
		return fmt.Errorf("command %s: is a directory", a.Exec[0])
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
	err = syscall.Exec(a.Exec[0], a.Exec, appEnv(os.Environ(), env, a.Env))
	if errors.Is(err, syscall.ENOENT) {
		return notFound(a.Exec[0])
	}
	return fmt.Errorf("command %s: %v", a.Exec[0], err)
}

// appEnv is the environment of an app's command: the manager's (base),
// then the user's variables (user), then the app's env, which are not in
// its unit (a unit's Environment= is world-readable); a later entry
// replaces an earlier one of the same name.
func appEnv(base, user []string, env map[string]string) []string {
	out := make([]string, 0, len(base)+len(user)+len(env))
	at := make(map[string]int)
	set := func(k, kv string) {
		if i, ok := at[k]; ok {
			out[i] = kv
			return
		}
		at[k] = len(out)
		out = append(out, kv)
	}
	for _, kv := range append(slices.Clone(base), user...) {
		k, _, _ := strings.Cut(kv, "=")
		set(k, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		set(k, k+"="+env[k])
	}
	return out
}

// notFound is the error of a command that does not exist; it is
// exec.ErrNotFound.
type notFound string

func (e notFound) Error() string      { return "command " + string(e) + ": not found" }
func (notFound) Is(target error) bool { return target == exec.ErrNotFound }

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

// lookupUser finds a user by name or, failing that, by number.
func lookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			return nil, fmt.Errorf("user %s: no such user", name)
		}
	}
	return u, nil
}

// lookupGroup finds a group by name or, failing that, by number.
func lookupGroup(name string) (*user.Group, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		if g, err = user.LookupGroupId(name); err != nil {
			return nil, fmt.Errorf("group %s: no such group", name)
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
