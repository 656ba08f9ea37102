package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit/exit"
)

// setupExits names systemd's exit statuses for a run that failed before
// its command was executed (EXIT_CHDIR, ... in systemd.exec(5)), as
// systemctl status shows them ("status=217/USER").
var setupExits = map[int32]string{
	200: "CHDIR", 201: "NICE", 202: "FDS", 203: "EXEC", 204: "MEMORY", 205: "LIMITS", 206: "OOM_ADJUST",
	207: "SIGNAL_MASK", 208: "STDIN", 209: "STDOUT", 210: "CHROOT", 211: "IOPRIO", 212: "TIMERSLACK",
	213: "SECUREBITS", 214: "SETSCHEDULER", 215: "CPUAFFINITY", 216: "GROUP", 217: "USER",
	218: "CAPABILITIES", 219: "CGROUP", 220: "SETSID", 221: "CONFIRM", 222: "STDERR", 224: "PAM",
	225: "NETWORK", 226: "NAMESPACE", 227: "NO_NEW_PRIVILEGES", 228: "SECCOMP", 229: "SELINUX_CONTEXT",
	230: "PERSONALITY", 231: "APPARMOR_PROFILE", 232: "ADDRESS_FAMILIES", 233: "RUNTIME_DIRECTORY",
	235: "CHOWN", 236: "SMACK_PROCESS_LABEL", 237: "KEYRING", 238: "STATE_DIRECTORY",
	239: "CACHE_DIRECTORY", 240: "LOGS_DIRECTORY", 241: "CONFIGURATION_DIRECTORY", 242: "NUMA_POLICY",
	243: "CREDENTIALS", 245: "BPF",
}

// setupFailure explains a run whose start job failed because systemd
// could not set it up (a setup exit status other than 203/EXEC, which
// execFailure reports), naming the setting and,
// where the caller can tell it, the reason; "" if the run shows no setup
// failure. It reads the unit (its settings, and its exit status, which
// may not have reached the state yet), so it must come before the
// release.
func (r *run) setupFailure(ctx context.Context) string {
	if r.state.ranCommand() {
		return ""
	}
	svc, err := r.mgr.Properties(ctx, r.unit, manager.ServiceIface)
	if err != nil {
		return ""
	}
	s := state(svc)
	if !s.ran() && s.str("Result") == "resources" {
		return r.resourcesFailure(ctx, s)
	}
	if !s.ran() || s.ranCommand() {
		return ""
	}
	code := s.i32("ExecMainStatus")
	status := fmt.Sprintf("systemd exit status %d/%s", code, setupExits[code])
	if setupExits[code] == "" {
		status = fmt.Sprintf("systemd exit status %d", code)
	}
	setting := s.str
	switch code {
	case 200:
		if dir := setting("WorkingDirectory"); dir != "" {
			return "working directory " + dir + ": " + r.dirReason(ctx, dir) + " (" + status + ")"
		}
	case 216:
		if g := setting("Group"); g != "" {
			return "group " + g + ": " + r.idReason(ctx, "group", g) + " (" + status + ")"
		}
	case 217:
		if u := setting("User"); u != "" {
			return "user " + u + ": " + r.idReason(ctx, "user", u) + " (" + status + ")"
		}
	}
	return "systemd could not set up the run (" + status + ")"
}

// resourcesFailure explains a start that systemd failed with the unit's
// Result "resources" before it made a run: a file or resource the run
// needs is missing or could not be made. Where the caller shares the
// manager's file system, the environment file (EnvironmentFile= without
// its "-") that cannot be read is named; systemd 252 tells which only in
// its log.
func (r *run) resourcesFailure(ctx context.Context, s state) string {
	if r.mgr.SharesFS(ctx) {
		files, _ := s["EnvironmentFiles"].Value().([][]any)
		for _, f := range files {
			path, _ := f[0].(string)
			if optional, _ := f[1].(bool); optional || path == "" {
				continue
			}
			f, err := os.Open(path)
			if err != nil {
				return "environment file " + path + ": " + errnoText(err) + " (result resources)"
			}
			f.Close()
		}
	}
	return "systemd could not set up the run: a file or resource it needs is missing or could not be made, such as an EnvironmentFile= (result resources; its log says which)"
}

// errnoText is err in words: the errno it wraps, without the system call
// and path.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// dirReason says why the manager could not enter dir: the error the
// caller meets, when it shares the manager's file system and meets one.
func (r *run) dirReason(ctx context.Context, dir string) string {
	if r.mgr.SharesFS(ctx) {
		if err := checkDir(dir); err != nil {
			return err.Error()
		}
	}
	return "cannot be entered by the unit"
}

// checkDir returns the reason, in words, why dir is not a directory one
// can enter, or nil.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno
		}
		return err
	}
	if !fi.IsDir() {
		return syscall.ENOTDIR
	}
	return nil
}

// idReason says why the manager could not resolve a user or group
// (kind): "no such user" (or group) when the caller, which shares the
// manager's file system, does not know the name either.
func (r *run) idReason(ctx context.Context, kind, name string) string {
	if r.mgr.SharesFS(ctx) && unknownID(kind, name) {
		return "no such " + kind
	}
	return "cannot be resolved or used by the manager"
}

// unknownID reports whether the user or group (kind) name, or numeric
// id, is unknown here.
func unknownID(kind, name string) bool {
	_, numeric := strconv.Atoi(name)
	var err error
	switch {
	case kind == "user" && numeric == nil:
		_, err = user.LookupId(name)
	case kind == "user":
		_, err = user.Lookup(name)
	case numeric == nil:
		_, err = user.LookupGroupId(name)
	default:
		_, err = user.LookupGroup(name)
	}
	var uu user.UnknownUserError
	var uid user.UnknownUserIdError
	var ug user.UnknownGroupError
	var gid user.UnknownGroupIdError
	return errors.As(err, &uu) || errors.As(err, &uid) || errors.As(err, &ug) || errors.As(err, &gid)
}

// execFailure returns the Status of a run whose start job failed because
// systemd could not execute its command (203/EXEC), with why where the
// caller can tell (explainExec); nil for any other run. As setupFailure,
// it reads the unit, whose exit status may not have reached the state yet,
// so it must come before the release.
func (r *run) execFailure(ctx context.Context, jobResult string) *Status {
	s := r.state
	if !s.ran() {
		svc, err := r.mgr.Properties(ctx, r.unit, manager.ServiceIface)
		if err != nil {
			return nil
		}
		s = maps.Clone(r.state)
		s.merge(svc)
	}
	st := s.status(r.unit, jobResult)
	if st.ExecError == nil {
		return nil
	}
	r.explainExec(ctx, st)
	return st
}

// explainExec adds to st, if systemd could not execute its command, why:
// the errno that execve(2) gives for the unit's command, as the caller
// finds it when it shares the manager's file system (CannotExecute). systemd
// itself writes the reason to the journal only.
func (r *run) explainExec(ctx context.Context, st *Status) {
	if st.ExecError == nil || !r.mgr.SharesFS(ctx) {
		return
	}
	svc, err := r.mgr.Properties(ctx, r.unit, manager.ServiceIface)
	if err != nil {
		return
	}
	// ExecStart is a(sasbttttuii): the path, the argv, ...
	cmds, _ := svc["ExecStart"].Value().([][]any)
	if len(cmds) == 0 || len(cmds[0]) == 0 {
		return
	}
	if path, _ := cmds[0][0].(string); path != "" {
		st.Exit = st.WithExecError(exit.CannotExecute(path))
	}
}
