package podrun

import (
	"os"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/record"
)

// ExecApp is "unitrun pod unit-hook start P A", the main process of app's
// service where the small hook binary (cmd/unitrun-hook) is not installed
// beside unitrun, or where it could not resolve the app's user or group
// names, which unitrun resolves through NSS: [appexec.Start], with the
// app read from the pod's state as the other hooks read it, and its log
// copied by the small hook binary if there is one, else by "unitrun pod
// unit-hook log-copy".
func ExecApp(stateDir, name, app string) error {
	_, a, err := pod.LoadApp(stateDir, name, app)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	copier := []string{self, "pod", record.HookCommand, record.HookLogCopy, "--state-dir", stateDir, name, app}
	if hook := pod.HookBinary(self); hook != "" {
		copier = append([]string{hook}, copier...)
	}
	return appexec.Start(stateDir, name, a.ExecSpec(), copier, nil)
}
