package pod

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit"
)

// RenderOptions are what the rendered hooks need to call unitrun back.
type RenderOptions struct {
	// Binary is the absolute path of the unitrun binary the hooks run.
	Binary string
	// Hook, if not "", is the absolute path of the small hook binary
	// (cmd/unitrun-hook) that starts each run of an app and records each
	// exit in place of unitrun (docs/pods.md, What records what).
	Hook string
	// StateDir is the absolute state directory the hooks are given.
	StateDir string
	// Manager is the hooks' --manager value; "" leaves the flag out.
	Manager string
	// LogPath, if not nil, names the file an app's stdout and stderr are
	// appended to; nil or "" sends them to the journal.
	LogPath func(app string) string
}

// HookPath is where the small hook binary (cmd/unitrun-hook) that records
// each exit of an app goes with the unitrun binary at binary: beside it,
// named after it, as unitrun-hook goes with unitrun; a copy of unitrun
// under another name (inject's content-addressed one) has its own.
func HookPath(binary string) string { return binary + "-hook" }

// HookBinary returns [HookPath] of binary, for RenderOptions.Hook, if an
// executable file is there, else "" (a "go run", or a build of unitrun
// alone): the units then run unitrun's own hooks.
func HookBinary(binary string) string {
	path := HookPath(binary)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return ""
	}
	return path
}

// A UnitFile is a rendered unit: its name and the content of its file.
type UnitFile struct {
	Name string
	Data []byte
}

// Graph renders the unit files of m's graph, in the order of [Nodes]. m must
// be valid, as Parse and Load return it. Every value taken from m or o is
// escaped by package unit, so no string can add a line, a setting or a
// specifier to a unit file.
func Graph(m *Manifest, o RenderOptions) ([]UnitFile, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	var files []UnitFile
	for _, n := range Nodes(m) {
		f, err := render(m, o, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name, err)
		}
		data, err := f.Bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.Name, err)
		}
		files = append(files, UnitFile{Name: n.Name, Data: data})
	}
	return files, nil
}

func (o RenderOptions) validate() error {
	if !filepath.IsAbs(o.Binary) {
		return fmt.Errorf("RenderOptions.Binary %q: must be an absolute path", o.Binary)
	}
	if o.Hook != "" && !filepath.IsAbs(o.Hook) {
		return fmt.Errorf("RenderOptions.Hook %q: must be an absolute path", o.Hook)
	}
	if !filepath.IsAbs(o.StateDir) || filepath.Clean(o.StateDir) != o.StateDir {
		return fmt.Errorf("RenderOptions.StateDir %q: must be a clean absolute path", o.StateDir)
	}
	return nil
}

// render writes the unit file of n.
func render(m *Manifest, o RenderOptions, n Node) (*unit.File, error) {
	h := hooks{m: m, o: o}
	f := new(unit.File)
	desc := "unitrun pod " + m.Name
	switch n.Role {
	case AppRole:
		desc += ": app " + n.App
	case ReaperRole:
		desc += ": reaper of " + n.App
	case ShutdownRole:
		desc += ": shutdown"
	case ProbeRole:
		desc += ": probe of " + n.App
	}
	f.Set("Unit", "Description", unit.EscapeSpecifiers(desc))
	f.Set("Unit", "DefaultDependencies", "no")
	switch n.Role {
	case AppRole, ProbeRole:
		f.Set("Unit", "StartLimitIntervalSec", "0")
	case ReaperRole, ShutdownRole:
		f.Set("Unit", "StopWhenUnneeded", "yes")
	}
	for _, k := range depKinds {
		var units []string
		for _, d := range n.Deps {
			if d.Kind == k {
				units = append(units, d.Unit)
			}
		}
		if units != nil {
			// Unit names from package unit's escaping hold no specifiers,
			// and dependency settings keep backslashes as written.
			f.Set("Unit", string(k), strings.Join(units, " "))
		}
	}
	var err error
	switch n.Role {
	case AppRole:
		err = app(f, n, m.App(n.App), m, h)
	case ReaperRole:
		// Only an app that may restart can end for good with a record
		// that says "restarting"; reap-app records the end of every other
		// app, whose reaper is a target: it runs no process, where a
		// service would have to run one at its stop (systemd refuses a
		// service with neither ExecStart= nor ExecStop=), and a process
		// more on every exit costs the manager as much as the app's own.
		if m.App(n.App).RestartPolicy != record.Never {
			err = idle(f, n, h.argv(HookReap, n.App))
		}
	case ShutdownRole:
		err = idle(f, n, h.argv(HookShutdown))
	case ProbeRole:
		f.Set("Service", "Type", "exec")
		f.Set("Service", "Slice", n.Slice)
		// The stop's SIGTERM goes to the probe alone, which then ends
		// the check in flight itself; sent to the check's command too,
		// it would kill it before the probe knew of the stop, and the
		// probe would count an app that just exited as failing its check
		// (and, at the threshold, act). What is left gets SIGKILL.
		f.Set("Service", "KillMode", "mixed")
		// A probe with a stopTimeout waits out the end of the run it
		// acted on, through its own stop (podrun.RunProbe), which so
		// lasts up to that long.
		if g := m.App(n.App).ProbeStopTimeout(); g > 0 {
			f.Set("Service", "TimeoutStopSec", timeSpan(g+defaultStopTimeout))
		}
		err = setExec(f, "ExecStart", "", h.argv(HookProbe, n.App))
	}
	return f, err
}

// idle writes a service that starts at once, runs nothing (a oneshot
// service with RemainAfterExit=yes needs no ExecStart=), and runs stop
// when it stops: a reaper or the shutdown service.
func idle(f *unit.File, n Node, stop []string) error {
	f.Set("Service", "Type", "oneshot")
	f.Set("Service", "RemainAfterExit", "yes")
	f.Set("Service", "Slice", n.Slice)
	return setExec(f, "ExecStop", "", stop)
}

// app writes the service of a, an app of m.
func app(f *unit.File, n Node, a *App, m *Manifest, h hooks) error {
	if a.Init {
		f.Set("Service", "Type", "oneshot")
		// A finished init app stays active, so that restarting another
		// app, which Requires= it, does not run it again.
		f.Set("Service", "RemainAfterExit", "yes")
	} else {
		f.Set("Service", "Type", "exec")
	}
	f.Set("Service", "Slice", n.Slice)
	// Delegate=yes lets "unitrun pod exec" move a process into the
	// app's cgroup (the manager's AttachProcessesToUnit takes only a
	// delegated unit), so that the app's limits and its stop reach the
	// command it runs there.
	f.Set("Service", "Delegate", "yes")
	// An image app of a host pod mounts its root in the manager's mount
	// namespace, where "+" commands run, before anything else of a run
	// ([Manifest.HostImageRoot]); an isolated pod's container mounts it.
	if m.HostImageRoot(a) {
		if err := setExec(f, "ExecStartPre", "+", h.argv(HookMountRoot, a.Name)); err != nil {
			return err
		}
	}
	// The await hook holds the first run until the sidecar before the app
	// has started ([Manifest.SidecarBefore]), as the kubelet starts each
	// container once the sidecars before it have started, not once their
	// units have (a Type=exec unit has started once the start hook runs,
	// before the command and its startup probe), and until the retried
	// init apps before it have succeeded ([Manifest.RetriedInitsBefore]).
	if m.Awaits(a.Name) {
		if err := setExec(f, "ExecStartPre", "+", h.argv(HookAwait, a.Name)); err != nil {
			return err
		}
	}
	// The command runs through the start hook, which waits out the
	// back-off of a run that follows a restart (no process of its own for
	// that: one more on every run), records the run's start and then
	// takes on the app's rootfs, workingDir, group and user:
	// systemd 252 applies RootDirectory=, WorkingDirectory=, User= and
	// Group= to the "+" hooks too, so one that does not resolve would
	// keep them from recording the run. The small hook binary runs it
	// where there is one.
	if err := setExec(f, "ExecStart", "", h.hooked(record.HookStart, a.Name)); err != nil {
		return err
	}
	// The lifecycle hooks: postStart beside the command's start, preStop
	// before the stop signal.
	if a.PostStart != nil {
		if err := setExec(f, "ExecStartPost", "+", h.argv(HookPostStart, a.Name)); err != nil {
			return err
		}
	}
	if a.PreStop != nil {
		if err := setExec(f, "ExecStop", "+", h.argv(HookPreStop, a.Name)); err != nil {
			return err
		}
	}
	if a.Init {
		// ExecStopPost= runs only when an init app fails or is stopped;
		// this records its success the moment it finishes.
		if err := setExec(f, "ExecStartPost", "+", h.hooked(record.HookReapApp, a.Name)); err != nil {
			return err
		}
	}
	if err := setExec(f, "ExecStopPost", "+", h.hooked(record.HookReapApp, a.Name)); err != nil {
		return err
	}
	f.Set("Service", "Restart", restartSetting[a.RestartPolicy])
	if m.Awaits(a.Name) {
		// The wait for the sidecar ends when the sidecar has started,
		// or when its startup probe restarts it at its own threshold;
		// the wait for a retried init app when it succeeds.
		f.Set("Service", "TimeoutStartSec", "infinity")
	}
	// KillMode= stays systemd's control-group: the app's log copier,
	// which ignores the stop's SIGTERM, must outlive the command to copy
	// what is left in its pipe, and KillMode=mixed would SIGKILL it as
	// soon as the command has exited.
	if a.StopTimeout > 0 {
		f.Set("Service", "TimeoutStopSec", timeSpan(a.StopTimeout))
	}
	// systemd applies NoNewPrivileges= to the start hook, which executes
	// the command, and not to the "+" hooks, which record the run.
	if a.NoNewPrivileges {
		f.Set("Service", "NoNewPrivileges", "yes")
	}
	// ProtectSystem=strict, as NoNewPrivileges=, reaches the start hook
	// and the command, not the "+" hooks; it leaves /home, /root and
	// /run/user to ProtectHome=. The start hook records the run's start in
	// the pod's state, which stays writable.
	if a.ReadOnlyRoot {
		f.Set("Service", "ProtectSystem", "strict")
		f.Set("Service", "ProtectHome", "read-only")
		f.Set("Service", "ReadWritePaths", quotedPath(record.Dir(h.o.StateDir, m.Name)))
		if a.ImageID != "" {
			// An image's root, and its writable layer, are in the pod's
			// state: read-only below it, but for what the container
			// binds in (the binds of terminationMessagePath and mounts
			// keep their own modes).
			f.Set("Service", "ReadOnlyPaths", quotedPath(a.Rootfs))
			for _, d := range []string{"dev", "proc", "sys"} {
				f.Set("Service", "ReadWritePaths", quotedPath(filepath.Join(a.Rootfs, d)))
			}
		}
	}
	if len(a.SuccessExitCodes) > 0 {
		codes := make([]string, len(a.SuccessExitCodes))
		for i, c := range a.SuccessExitCodes {
			codes[i] = strconv.Itoa(c)
		}
		f.Set("Service", "SuccessExitStatus", strings.Join(codes, " "))
	}
	// No Environment=: a unit file is world-readable, and so is a unit's
	// Environment= over D-Bus. The start hook sets the app's env from the
	// pod's manifest.json, which only root reads.
	if a.TerminationMessagePath != "" {
		// The command's view only: "+" hooks see the host's.
		f.Set("Service", "BindPaths", bindPath(record.TerminationFile(h.o.StateDir, m.Name, a.Name))+":"+bindPath(filepath.Join("/", a.Rootfs, a.TerminationMessagePath)))
	}
	for _, mt := range a.Mounts {
		key := "BindPaths"
		if mt.ReadOnly {
			key = "BindReadOnlyPaths"
		}
		f.Set("Service", key, bindPath(mt.Source)+":"+bindPath(filepath.Join("/", a.Rootfs, mt.Path)))
	}
	f.Set("Service", "SyslogIdentifier", unit.EscapeSpecifiers(m.Name+"/"+a.Name))
	out, err := output(h.o.LogPath, a.Name)
	if err != nil {
		return err
	}
	f.Set("Service", "StandardOutput", out)
	f.Set("Service", "StandardError", "inherit")
	// "pod stats" reads each app's usage from its unit's accounting,
	// which systemd 252 turns on by default for memory and tasks only
	// (DefaultCPUAccounting= is yes on cgroup v2 alone,
	// DefaultIOAccounting= no), and a manager's configuration may turn
	// off.
	for _, k := range []string{"CPUAccounting", "MemoryAccounting", "TasksAccounting", "IOAccounting"} {
		f.Set("Service", k, "yes")
	}
	return resources(f, a.Resources)
}

// quotedPath writes path as one word of a path list setting
// (ReadWritePaths=): in double quotes, backslash and double quote
// escaped, '%' doubled, so that systemd reads exactly path.
func quotedPath(path string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(unit.EscapeSpecifiers(path)) + `"`
}

// bindPath escapes path for one side of a BindPaths= pair: specifiers, and
// the backslash, colon and whitespace that would split it.
func bindPath(path string) string {
	var b strings.Builder
	for _, c := range unit.EscapeSpecifiers(path) {
		if c == '\\' || c == ':' || c == ' ' || c == '\t' || c == '"' || c == '\'' {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// restartSetting maps restart policies onto Restart=.
var restartSetting = map[record.RestartPolicy]string{
	record.Never:     "no",
	record.Always:    "always",
	record.OnFailure: "on-failure",
}

// output is the StandardOutput= of app.
func output(logPath func(string) string, app string) (string, error) {
	if logPath == nil {
		return "journal", nil
	}
	path := logPath(app)
	if path == "" {
		return "journal", nil
	}
	var p problems
	p.path(fmt.Sprintf("RenderOptions.LogPath(%q)", app), path)
	if err := errors.Join(p...); err != nil {
		return "", err
	}
	return "append:" + unit.EscapeSpecifiers(path), nil
}

func resources(f *unit.File, res Resources) error {
	if res.Memory != "" {
		n, err := unit.ParseSize(res.Memory)
		if err != nil {
			return err
		}
		f.Set("Service", "MemoryMax", strconv.FormatUint(n, 10))
	}
	if res.CPUWeight != nil {
		f.Set("Service", "CPUWeight", strconv.Itoa(*res.CPUWeight))
	}
	if res.CPUMillis != nil {
		// A thousandth of a CPU is a tenth of a percent.
		f.Set("Service", "CPUQuota", strconv.FormatFloat(float64(*res.CPUMillis)/10, 'f', -1, 64)+"%")
	}
	if res.Tasks != nil {
		f.Set("Service", "TasksMax", strconv.Itoa(*res.Tasks))
	}
	return nil
}

// hooks builds the command lines by which units call unitrun back.
type hooks struct {
	m *Manifest
	o RenderOptions
}

// argv is the command line of a hook: unitrun pod unit-hook NAME
// --state-dir DIR [--manager SPEC] POD [APP].
func (h hooks) argv(hook string, app ...string) []string {
	argv := []string{h.o.Binary, "pod", record.HookCommand, hook, "--state-dir", h.o.StateDir}
	if h.o.Manager != "" {
		argv = append(argv, "--manager", h.o.Manager)
	}
	return append(append(argv, h.m.Name), app...)
}

// hooked is the command line of a hook that the small hook binary runs,
// if there is one (the start of each run and the record of each exit of
// app), which is given unitrun's path first, to run it when it needs to.
func (h hooks) hooked(hook, app string) []string {
	argv := h.argv(hook, app)
	if h.o.Hook == "" {
		return argv
	}
	return append([]string{h.o.Hook}, argv...)
}

// setExec sets an Exec*= command line, with prefix ("+": full privileges)
// before the quoted argv.
func setExec(f *unit.File, key, prefix string, argv []string) error {
	line, err := unit.ExecLine(argv)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	f.Set("Service", key, prefix+line)
	return nil
}

// timeSpan formats d in systemd's time span syntax, rounding up to the
// microsecond, systemd's precision.
func timeSpan(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return strconv.FormatInt(int64((d+time.Microsecond-1)/time.Microsecond), 10) + "us"
}

// containerStopSlack is what the container service's stop timeout allows
// beyond the longest stop timeout of an app: time for the reapers, the
// shutdown hook and the pod's systemd to end (systemd's default stop
// timeout twice over).
const (
	defaultStopTimeout = 90 * time.Second // systemd's DefaultTimeoutStopSec=
	containerStopSlack = 2 * defaultStopTimeout
)

// ContainerService renders the service that runs isolated pod m's systemd.
// It is Type=notify: "unitrun pod container" reports it ready once the
// pod's systemd has booted, which is once the start job of the pod's
// target is done. KillMode=mixed sends the stop signal (SIGTERM) to that
// process alone, which powers the pod's systemd off; only what is left once
// it has exited, or after the stop timeout, is killed. ExecStopPost= ends
// the pod's record if its systemd died without doing so.
func ContainerService(m *Manifest, o RenderOptions) ([]byte, error) {
	h := hooks{m: m, o: RenderOptions{Binary: o.Binary, StateDir: o.StateDir}}
	f := new(unit.File)
	f.Set("Unit", "Description", unit.EscapeSpecifiers("unitrun pod "+m.Name+" (own systemd)"))
	f.Set("Unit", "DefaultDependencies", "no")
	f.Set("Unit", "Conflicts", shutdownTarget)
	f.Set("Unit", "Before", shutdownTarget)
	f.Set("Service", "Type", "notify")
	f.Set("Service", "NotifyAccess", "main")
	if err := setExec(f, "ExecStart", "", h.argv(HookContainer)); err != nil {
		return nil, err
	}
	if err := setExec(f, "ExecStopPost", "", h.argv(HookContainerExited)); err != nil {
		return nil, err
	}
	f.Set("Service", "KillMode", "mixed")
	f.Set("Service", "Delegate", "yes")
	f.Set("Service", "TimeoutStartSec", "infinity")
	longest := defaultStopTimeout
	for _, a := range m.Apps {
		longest = max(longest, a.StopTimeout)
	}
	f.Set("Service", "TimeoutStopSec", timeSpan(longest+containerStopSlack))
	f.Set("Service", "SyslogIdentifier", unit.EscapeSpecifiers(m.Name))
	return f.Bytes()
}
