package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/unit/exit"
)

// AppState is where an app is in its life.
type AppState string

// App states.
const (
	AppWaiting    AppState = "waiting"    // not started yet
	AppRunning    AppState = "running"    // started and not exited
	AppRestarting AppState = "restarting" // exited and will run again
	AppExited     AppState = "exited"     // ended for good, successfully
	AppFailed     AppState = "failed"     // ended for good, unsuccessfully
)

// AppStatus is the record of one app, written each time the app starts or
// exits. ExitCode, Signal and Result describe its last exit.
type AppStatus struct {
	Name     string   `json:"name"`
	State    AppState `json:"state"`
	ExitCode *int     `json:"exit_code,omitempty"`
	Signal   string   `json:"signal,omitempty"`
	Result   string   `json:"result,omitempty"`
	Restarts int      `json:"restarts"`
	// Backoff is the delay before the app's current or next run, from
	// Decide; 0 before the first restart.
	Backoff    time.Duration `json:"backoff_ns,omitempty"`
	StartedAt  time.Time     `json:"started_at,omitzero"`
	FinishedAt time.Time     `json:"finished_at,omitzero"`
	LastExitAt time.Time     `json:"last_exit_at,omitzero"`
	// LastStartedAt is when the run whose exit LastExitAt records
	// started; zero if it never got as far as its command. StartedAt
	// moves on to the next run, this stays.
	LastStartedAt time.Time `json:"last_started_at,omitzero"`
	// Invocation is systemd's $INVOCATION_ID of the run whose exit was
	// recorded last, so that one run is never recorded twice.
	Invocation string `json:"invocation_id,omitempty"`
	// PID is the process id of the running run's main process, which
	// executes the app's command (in an isolated pod, in its PID
	// namespace); 0 when the app does not run.
	PID int `json:"pid,omitempty"`
	// Message says why the last run could not execute the app's command
	// ("user web: no such user"); empty if it could.
	Message string `json:"message,omitempty"`
	// Probe is the state of the app's liveness probe, once it has run.
	Probe *ProbeStatus `json:"probe,omitempty"`
	// Startup and Readiness are the states of the app's startup and
	// readiness probes in its current run, once they have run.
	Startup   *ProbeStatus `json:"startup_probe,omitempty"`
	Readiness *ProbeStatus `json:"readiness_probe,omitempty"`
	// Ready says the app runs and is ready: its startup probe, if it has
	// one, has succeeded in this run, and its readiness probe, if it has
	// one, has succeeded since it last reached its failure threshold (a
	// failure short of it leaves the app ready). A run starts not ready
	// if the app has either probe, and ready if it has neither; an exit
	// ends it, but for the success of an init app, which stays ready, as
	// in Kubernetes.
	Ready bool `json:"ready"`
	// FromSystemd says the record of the app's last exit could not be
	// written (its hook failed: the state directory was full, say), and
	// that exit is systemd's, read back from the app's unit
	// (podrun.Runner.Status); it is never written to disk.
	FromSystemd bool `json:"-"`
}

// ProbeStatus is the state of an app's health probe.
type ProbeStatus struct {
	// LastResult is "success", "failure" or "timeout".
	LastResult string `json:"last_result"`
	// Message says why the last check failed, or what to note of one that
	// succeeded (an http probe's redirect to another host, not followed).
	Message string `json:"message,omitempty"`
	// ConsecutiveFailures counts the failed checks since the last success
	// or the last action; it is reset when the probe acts.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// Acted is the action the probe took at its last failure threshold, set
	// before it restarts the app or ends the pod, so that the app's exit is
	// recorded as a restart or a failure.
	Acted ProbeAction `json:"acted,omitempty"`
	// RunStartedAt names the run whose checks this state counts: its
	// start, the app's StartedAt while it ran (LastStartedAt once it
	// has ended). The liveness probe's state outlives its run until the
	// next run's first check.
	RunStartedAt time.Time `json:"run_started_at,omitzero"`
}

// MaxFileSize bounds what ReadFile reads.
const MaxFileSize = 1 << 20

// WriteExitCode records code as app's last exit code, atomically but not
// synced to disk (see the package documentation).
func WriteExitCode(stateDir, pod, app string, code int) error {
	if err := CheckNames(pod, app); err != nil {
		return err
	}
	if code < 0 || code > 255 {
		return fmt.Errorf("exit code %d: must be in 0..255", code)
	}
	return WriteFile(stateDir, false, []byte(strconv.Itoa(code)+"\n"), "pods", pod, "status", app)
}

// ReadExitCode returns app's last exit code, as WriteExitCode wrote it. An
// app that has not exited yet has no file: the error is then fs.ErrNotExist.
func ReadExitCode(stateDir, pod, app string) (int, error) {
	if err := CheckNames(pod, app); err != nil {
		return 0, err
	}
	data, err := ReadFile(stateDir, "pods", pod, "status", app)
	if err != nil {
		return 0, err
	}
	return parseExitCode(data)
}

// parseExitCode reads an exit code file: a decimal 0..255 without
// leading zeros, and a newline or none.
func parseExitCode(data []byte) (int, error) {
	digits := string(bytes.TrimSuffix(data, []byte("\n")))
	if n, err := strconv.Atoi(digits); err == nil && n >= 0 && n <= 255 && strconv.Itoa(n) == digits {
		return n, nil
	}
	return 0, fmt.Errorf("exit code file %q: must hold a decimal number 0..255", data)
}

// WriteApp records s, the status of an app of pod, atomically but not
// synced to disk.
func WriteApp(stateDir, pod string, s AppStatus) error {
	if err := CheckNames(pod); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(stateDir, false, append(data, '\n'), "pods", pod, "apps", s.Name+".json")
}

// ReadApp returns the status of app of pod, as WriteApp wrote it.
func ReadApp(stateDir, pod, app string) (AppStatus, error) {
	if err := CheckNames(pod, app); err != nil {
		return AppStatus{}, err
	}
	data, err := ReadFile(stateDir, "pods", pod, "apps", app+".json")
	if err != nil {
		return AppStatus{}, err
	}
	s, err := parseApp(data)
	if err == nil && s.Name != app {
		err = fmt.Errorf("app status names app %q, not %q", s.Name, app)
	}
	return s, Broken(stateDir, pod, err, "apps", app+".json")
}

func parseApp(data []byte) (AppStatus, error) {
	var s AppStatus
	if err := StrictJSON(data, &s); err != nil {
		return AppStatus{}, err
	}
	return s, s.Validate()
}

// Validate checks s as ReadApp and WriteApp do.
func (s AppStatus) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("app status %q: "+format, append([]any{s.Name}, args...)...)
	}
	if !isName(s.Name, maxAppName) {
		return bad("name %s", AppNameRule)
	}
	switch s.State {
	case AppWaiting, AppRunning, AppRestarting, AppExited, AppFailed:
	default:
		return bad("state %q: must be waiting, running, restarting, exited or failed", s.State)
	}
	if (s.State == AppExited || s.State == AppFailed) && s.ExitCode == nil {
		return bad("state %s needs an exit_code", s.State)
	}
	if c := s.ExitCode; c != nil && (*c < 0 || *c > 255) {
		return bad("exit_code %d: must be in 0..255", *c)
	}
	if s.Signal != "" {
		n, ok := exit.SignalNumber(s.Signal)
		if !ok || s.ExitCode == nil || *s.ExitCode != 128+n {
			return bad("signal %q: must be a signal name, with exit_code 128 plus its number", s.Signal)
		}
	}
	if s.Result != "" && !exit.ValidResult(s.Result) {
		return bad("result %q: must be a systemd service result", s.Result)
	}
	if s.Restarts < 0 || s.Backoff < 0 {
		return bad("restarts and backoff_ns must not be negative")
	}
	if s.PID < 0 {
		return bad("pid %d: must not be negative", s.PID)
	}
	for i, p := range []*ProbeStatus{s.Probe, s.Startup, s.Readiness} {
		field := []string{"probe", "startup_probe", "readiness_probe"}[i]
		if p == nil {
			continue
		}
		switch {
		case p.LastResult != ProbeSuccess && p.LastResult != ProbeFailure && p.LastResult != ProbeTimeout:
			return bad("%s last_result %q: must be success, failure or timeout", field, p.LastResult)
		case p.ConsecutiveFailures < 0:
			return bad("%s consecutive_failures must not be negative", field)
		case p.Acted != "" && p.Acted != RestartApp && p.Acted != FailPod:
			return bad("%s acted %q: must be restart or fail-pod", field, p.Acted)
		}
	}
	return nil
}

// StrictJSON decodes the one JSON value in data into v, refusing unknown
// fields and anything after the value, with errors in the words of a
// file's content, not of Go's decoder.
func StrictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return JSONError(err, len(data))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// JSONError tells err, the decoding of size bytes of JSON into a record
// that failed, as what is wrong with them, in no words of Go's.
func JSONError(err error, size int) error {
	var syntax *json.SyntaxError
	var kind *json.UnmarshalTypeError
	switch {
	case size == 0 || errors.Is(err, io.EOF):
		return errors.New("empty")
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &syntax) && syntax.Offset >= int64(size):
		return fmt.Errorf("not JSON: cut short after %d bytes", size)
	case errors.As(err, &syntax):
		return fmt.Errorf("not JSON: at byte %d of %d", syntax.Offset, size)
	case errors.As(err, &kind):
		return fmt.Errorf("field %s holds a JSON %s, not what unitrun writes there", kind.Field, kind.Value)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", field)
	}
	return err
}

// A BrokenError is a file of a pod's state that cannot be read as the
// record unitrun writes there: not JSON, or not such a record (edited,
// truncated by a full disk, or another program's). Only a forced removal
// of the pod ("pod rm --force"), which reads none of its state, goes past
// it.
type BrokenError struct {
	Path string // the file
	Err  error  // what is wrong with it
}

func (e *BrokenError) Error() string { return fmt.Sprintf("%s is broken: %v", e.Path, e.Err) }
func (e *BrokenError) Unwrap() error { return e.Err }

// Broken is err, the reading of pod's file elem (under its directory)
// whose content is wrong, as a *BrokenError naming it; nil for nil.
func Broken(stateDir, pod string, err error, elem ...string) error {
	if err == nil {
		return nil
	}
	return &BrokenError{Path: filepath.Join(append([]string{Dir(stateDir, pod)}, elem...)...), Err: err}
}

// WriteFile replaces the file at the path made of elem under stateDir,
// creating the directories on the way: with durable, synced to disk
// (atomicfile.Write), else only atomically (atomicfile.Replace). Like ReadFile,
// it refuses a symlink at any directory under stateDir; at the file
// itself, the rename replaces a symlink rather than follow it.
func WriteFile(stateDir string, durable bool, data []byte, elem ...string) error {
	path := filepath.Join(append([]string{stateDir}, elem...)...)
	rel := ""
	for _, e := range elem[:len(elem)-1] {
		rel = filepath.Join(rel, e)
		if fi, err := os.Lstat(filepath.Join(stateDir, rel)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: is a symlink", filepath.Join(stateDir, rel))
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Root's alone, as the pod's directory is: the spec holds the apps'
	// env.
	if durable {
		return atomicfile.Write(path, data, 0o600)
	}
	return atomicfile.Replace(path, data, 0o600)
}

// ReadFile returns the content of the regular file at the path made of elem
// under stateDir. It stays inside stateDir and refuses a symlink, or an
// entry of the wrong type, at any element: it opens each element in the
// directory it opened before, never following a symlink (O_NOFOLLOW), and
// checks the type of what it opened, so a file that the writers rename
// over it meanwhile is read whole, old or new. An element that does not
// exist is an error that is fs.ErrNotExist.
func ReadFile(stateDir string, elem ...string) ([]byte, error) {
	dir, err := syscall.Open(stateDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: stateDir, Err: err}
	}
	path := stateDir
	for i, e := range elem {
		path = filepath.Join(path, e)
		last := i == len(elem)-1
		if e == "" || e == "." || e == ".." || strings.ContainsRune(e, '/') {
			syscall.Close(dir)
			return nil, fmt.Errorf("%s: not a name of the state directory", path)
		}
		flags := syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
		if last {
			// No wait on a FIFO; the type is checked once open.
			flags |= syscall.O_NONBLOCK
		} else {
			flags |= syscall.O_DIRECTORY
		}
		fd, err := openat(dir, e, flags)
		if err == syscall.ENOTDIR {
			// A symlink where a directory belongs fails O_DIRECTORY
			// too; which it is only chooses the message.
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				err = syscall.ELOOP
			}
		}
		syscall.Close(dir)
		switch {
		case err == syscall.ELOOP:
			return nil, fmt.Errorf("%s: is a symlink", path)
		case err == syscall.ENOTDIR:
			return nil, fmt.Errorf("%s: not a directory", path)
		case err != nil:
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		dir = fd
	}
	f := os.NewFile(uintptr(dir), path)
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(dir, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileSize)
	}
	return data, nil
}

// openat is openat(2), retried when a signal interrupts it.
func openat(dir int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dir, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// Acted returns the action a probe of s took at its failure threshold in
// the run whose exit comes next, and the probe's state; "" and nil if none.
func (s AppStatus) Acted() (ProbeAction, *ProbeStatus) {
	for _, p := range []*ProbeStatus{s.Probe, s.Startup} {
		if p != nil && p.Acted != "" {
			return p.Acted, p
		}
	}
	return "", nil
}
