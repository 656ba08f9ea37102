package pod

import (
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
)

// What an exit records, and the policies it applies, live in package
// pod/record, which the exit hook links without the rest of pod; pod gives
// them under their names of old.

type (
	AppState      = record.AppState
	AppStatus     = record.AppStatus
	ProbeStatus   = record.ProbeStatus
	ProbeAction   = record.ProbeAction
	ExitPolicy    = record.ExitPolicy
	RestartPolicy = record.RestartPolicy
	Backoff       = record.Backoff
	Exit          = record.Exit
	Event         = record.Event
	History       = record.History
	Outcome       = record.Outcome
	Decision      = record.Decision
	HookEnv       = record.HookEnv
)

// App states.
const (
	AppWaiting    = record.AppWaiting
	AppRunning    = record.AppRunning
	AppRestarting = record.AppRestarting
	AppExited     = record.AppExited
	AppFailed     = record.AppFailed
)

// Exit policies.
const (
	FirstFailure = record.FirstFailure
	AnyExit      = record.AnyExit
	AllExit      = record.AllExit
)

// Restart policies.
const (
	Never     = record.Never
	Always    = record.Always
	OnFailure = record.OnFailure
)

// Probe actions and results.
const (
	RestartApp   = record.RestartApp
	FailPod      = record.FailPod
	ProbeSuccess = record.ProbeSuccess
	ProbeFailure = record.ProbeFailure
	ProbeTimeout = record.ProbeTimeout
)

// NoProcessCode is [record.NoProcessCode].
const NoProcessCode = record.NoProcessCode

// The records' files and the policies, as package record has them.
var (
	Dir                  = record.Dir
	WriteExitCode        = record.WriteExitCode
	ReadExitCode         = record.ReadExitCode
	WriteApp             = record.WriteApp
	ReadApp              = record.ReadApp
	ReadAppOrNew         = record.ReadAppOrNew
	Stopping             = record.Stopping
	MarkStopping         = record.MarkStopping
	Lock                 = record.Lock
	OpenStartError       = record.OpenStartError
	TerminationFile      = record.TerminationFile
	EmptyTerminationFile = record.EmptyTerminationFile
	PodExitCode          = record.PodExitCode
	HookEnvFromOS        = record.HookEnvFromOS
)

// The copier of an app's output, as package pod/logcopy has it.
const (
	LogReserve    = logcopy.LogReserve
	DroppedMarker = logcopy.DroppedMarker
)

// The copier of an app's output and its times file, as package
// pod/logcopy has them.
var (
	LogCopy  = logcopy.Copy
	LogTimes = logcopy.Times
)
