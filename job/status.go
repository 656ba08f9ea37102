package job

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
	"github.com/unitrun/unitrun/unit/exit"
)

// Status is what happened to one run of a unit: systemd's own account, read
// from the unit when its main process ended. How the process ended (its
// exit code or signal, and systemd's Result) is the embedded unit.Exit,
// as every face of unitrun reports it.
type Status struct {
	Unit         string // the unit it ran as
	InvocationID string // the run's invocation ID (hex), as in the journal's _SYSTEMD_INVOCATION_ID
	JobResult    string // result of the start job: "done" when it started
	exit.Exit
	StartedAt  time.Time // when the main process started
	FinishedAt time.Time // when it ended
	Attempts   int       // how many runs a retry policy made (1 without one)
	// Restarts is how many times systemd restarted the unit (Restart=,
	// its NRestarts) before the run this Status describes, its last.
	Restarts int
	// MainPID is the main process's PID (0 if none started), as in the
	// journal's _PID of what it wrote itself to its standard output and
	// error (the lines of its children carry theirs).
	MainPID int
	// SuccessListed reports that the unit's SuccessExitStatus= lists how
	// the main process ended, its exit status or (named explicitly) its
	// signal: systemd counts such a run a success, and so does Success.
	SuccessListed bool
}

// Success reports whether the run is a success as systemd counts one: its
// Result is success (or not known), and the main process exited with
// status 0 or ended as the unit's SuccessExitStatus= lists
// (SuccessListed). A service killed by SIGTERM, SIGINT, SIGHUP or SIGPIPE
// is a success to systemd but not here, unless SuccessExitStatus= names
// that signal: Signal is set. Result alone is not trusted: systemctl
// reset-failed sets it back to success while ExecMainStatus keeps the
// failed run's status.
func (s *Status) Success() bool {
	if s.Result != "" && s.Result != "success" {
		return false
	}
	return s.SuccessListed || s.ExitCode == 0 && s.Signal == 0
}

// Ended returns how the main process of the run that returned st and err
// ended: st's Exit, or where Start found the command missing or not
// executable before it made a unit (an *exec.Error, st nil), the Exit of
// exit.ExecFailed (127 or 126), as systemd's failure to execute it reads.
// A run that had no process ends in the zero Exit.
func Ended(st *Status, err error) exit.Exit {
	if st != nil {
		return st.Exit
	}
	var xe *exec.Error
	if errors.As(err, &xe) {
		return exit.ExecFailed(xe.Err)
	}
	return exit.Exit{}
}

// ExitError reports a run that did not succeed (Status.Success): it exited
// with a status other than 0 that the unit's SuccessExitStatus= does not
// list, was killed by a signal, or systemd counts it failed (a timeout, a
// watchdog, an ExecStopPost= that failed, ...), even where the command
// itself exited 0.
type ExitError struct {
	*Status
}

func (e *ExitError) Error() string { return e.Unit + ": " + e.Status.String() }

// JobError reports a start job that did not complete, so the command never
// ran: Result is the JobRemoved result (failed, canceled, timeout,
// dependency, skipped, ...). UnitResult is the unit's own Result after
// the job, if systemd set one other than success ("resources" for a file
// or resource the run needs, "start-limit-hit", ...), as systemd-run's
// "Finished with result:" tells it. Reason, when systemd could not set up
// the run, names the setting and why ("user nope: no such user (systemd
// exit status 217/USER)", "environment file /x.env: no such file or
// directory (result resources)").
type JobError struct {
	Unit       string
	Result     string
	UnitResult string
	Reason     string
}

func (e *JobError) Error() string {
	switch {
	case e.Reason != "":
		return e.Unit + ": " + e.Reason
	case e.UnitResult != "":
		return "job for " + e.Unit + ": " + e.Result + ", result " + e.UnitResult
	}
	return "job for " + e.Unit + ": " + e.Result
}

// ErrUnitExists is wrapped by errors for a unit name that is already taken:
// unitrun never joins or touches someone else's unit.
var ErrUnitExists = errors.New("unit already exists")

// ErrCollected is wrapped by the error of a wait for a unit that systemd
// collected while the connection to the manager was down (stopped or
// reset by someone else while a daemon-reexec or a bus restart cut the
// connection): no signal of its end was seen, and its outcome went with
// it. A unit kept for its caller (AddRef=yes, which unitrun sets where
// the manager is on a bus) or pinned (Cmd.Pin) is not collected so.
var ErrCollected = errors.New("unit was collected while the connection to the manager was down; its outcome is lost")

// ErrNeverRan is wrapped by Attach's error for a unit that is loaded,
// inactive, and never ran: its start job was canceled, or failed before
// systemd made the run (no invocation ID). Attach releases it.
var ErrNeverRan = errors.New("unit never ran")

// state accumulates a unit's properties from PropertiesChanged signals and
// property reads.
type state map[string]dbus.Variant

// stateProps are the properties that state's methods read, the only ones
// a run's Watch asks for (manager.Conn.WatchProps): a property read here
// must be named here.
var stateProps = []string{
	"ActiveState", "SubState", "LoadState", "Job", "Type", "InvocationID", "Result",
	"ExecMainCode", "ExecMainStatus", "ExecMainPID", "ExecMainStartTimestamp", "ExecMainExitTimestamp",
	"NRestarts", "SuccessExitStatus",
}

func (s state) merge(props map[string]dbus.Variant) {
	for k, v := range props {
		s[k] = v
	}
}

func (s state) str(name string) string {
	v, _ := s[name].Value().(string)
	return v
}

func (s state) i32(name string) int32 {
	v, _ := s[name].Value().(int32)
	return v
}

func (s state) u64(name string) uint64 {
	v, _ := s[name].Value().(uint64)
	return v
}

// ended reports whether the unit has reached the state a finished run
// leaves it in: failed, inactive, or active and exited (RemainAfterExit).
func (s state) ended() bool {
	switch s.str("ActiveState") {
	case "failed", "inactive":
		return true
	case "active":
		return s.str("SubState") == "exited"
	}
	return false
}

// invoked reports whether systemd made a run of the unit: it has an
// invocation ID from its last start on.
func (s state) invoked() bool {
	id, _ := s["InvocationID"].Value().([]byte)
	return len(id) > 0
}

// job returns the unit's pending job, or "" if it has none.
func (s state) job() dbus.ObjectPath {
	v, _ := s["Job"].Value().([]any)
	if len(v) != 2 || !manager.JobPending(s) {
		return ""
	}
	path, _ := v[1].(dbus.ObjectPath)
	return path
}

// marked reports whether the unit carries mark, the property (runMark)
// that a run set on the unit it made.
func (s state) marked(mark unit.Property) bool {
	want := mark.Value.Value().([][]byte)[0]
	have, _ := s["LogExtraFields"].Value().([][]byte)
	return slices.ContainsFunc(have, func(f []byte) bool { return bytes.Equal(f, want) })
}

// successListed reports whether the unit's SuccessExitStatus= (its
// property, D-Bus type (aiai): the exit statuses, then the signals) lists
// how the main process ended, as systemd's is_clean_exit counts it: an
// exit status, or a signal that killed it (not one that dumped core).
func (s state) successListed() bool {
	v, _ := s["SuccessExitStatus"].Value().([]any)
	if len(v) != 2 {
		return false
	}
	var list []int32
	switch s.i32("ExecMainCode") {
	case cldExited:
		list, _ = v[0].([]int32)
	case cldKilled:
		list, _ = v[1].([]int32)
	}
	return slices.Contains(list, s.i32("ExecMainStatus"))
}

// mayBeListed reports whether the run's end is one that only the unit's
// SuccessExitStatus= tells a success or a failure: its main process ended
// with a status other than 0, or by a signal, and systemd's Result is
// success (or not known).
func (s state) mayBeListed() bool {
	switch s.str("Result") {
	case "", "success":
	default:
		return false
	}
	code := s.i32("ExecMainCode")
	return code == cldExited && s.i32("ExecMainStatus") != 0 || code == cldKilled
}

// ran reports whether the main process of this run was started and ended.
func (s state) ran() bool { return s.i32("ExecMainCode") != 0 }

// Exit codes systemd uses for failures before the command runs (EXIT_CHDIR,
// EXIT_EXEC, ... in systemd.exec(5)).
const (
	firstSetupExit = 200
	lastSetupExit  = 245
)

// ranCommand reports whether the main process got as far as the command
// itself, so its exit status is the command's and not systemd's setup code.
func (s state) ranCommand() bool {
	if !s.ran() {
		return false
	}
	st := s.i32("ExecMainStatus")
	return s.i32("ExecMainCode") != cldExited || st < firstSetupExit || st > lastSetupExit
}

// ExecMainCode of a main process that exited, and of one that a signal
// killed (waitid(2) si_code CLD_EXITED, CLD_KILLED).
const (
	cldExited = 1
	cldKilled = 2
)

// status builds the Status of the run the state describes.
func (s state) status(unitName, jobResult string) *Status {
	st := &Status{Unit: unitName, JobResult: jobResult, Attempts: 1}
	st.Exit = exit.ExitFromMain(s.i32("ExecMainCode"), s.i32("ExecMainStatus"), s.str("Result"))
	if id, ok := s["InvocationID"].Value().([]byte); ok && len(id) > 0 {
		st.InvocationID = hex.EncodeToString(id)
	}
	if pid, ok := s["ExecMainPID"].Value().(uint32); ok {
		st.MainPID = int(pid)
	}
	if n, ok := s["NRestarts"].Value().(uint32); ok {
		st.Restarts = int(n)
	}
	if t := s.u64("ExecMainStartTimestamp"); t != 0 {
		st.StartedAt = time.UnixMicro(int64(t))
	}
	if t := s.u64("ExecMainExitTimestamp"); t != 0 {
		st.FinishedAt = time.UnixMicro(int64(t))
	}
	st.SuccessListed = s.successListed()
	return st
}

// SignalName returns the conventional name of sig, such as "SIGKILL" or
// "SIGRTMIN+3" (exit.SignalName with "SIG" before it); a signal without
// a name reads as "SIG<number>". Messages use it; JSON writes
// exit.SignalName's form (see exit.Exit.JSON).
func SignalName(sig syscall.Signal) string {
	return "SIG" + exit.SignalName(int(sig))
}
