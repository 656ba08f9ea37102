package main

import (
	"errors"
	"os"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/podrun"
	"github.com/unitrun/unitrun/pod/record"
)

// newPodHookCmd returns "unitrun pod unit-hook", hidden, under which are
// the hooks that a pod's units run (record.HookStart, ...). Each refuses,
// with exit status 2 and before it reads or writes anything of the pod,
// to run outside the unit it belongs to (pod.HookUnit): run by hand, it
// would record a run that is not the unit's.
func newPodHookCmd(f *podFlags) *cobra.Command {
	hook := func(name string, app bool, run func(cmd *cobra.Command, dir string, args []string) error) *cobra.Command {
		use, n := name+" POD", 1
		if app {
			use, n = name+" POD APP", 2
		}
		return &cobra.Command{
			Use:  use,
			Args: cobra.ExactArgs(n),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := inHookUnit(name, args); err != nil {
					return err
				}
				dir, err := f.dir()
				if err != nil {
					return err
				}
				return failed(run(cmd, dir, args))
			},
		}
	}
	cmd := &cobra.Command{
		Use:    record.HookCommand,
		Short:  "What a pod's units run; refused outside them",
		Hidden: true,
	}
	cmd.AddCommand(
		hook(record.HookStart, true, func(cmd *cobra.Command, dir string, args []string) error {
			// A command that cannot be executed exits 127 or 126, as
			// with "unitrun run".
			return exitFor(podrun.ExecApp(dir, args[0], args[1]), false)
		}),
		hook(record.HookLogCopy, true, func(cmd *cobra.Command, dir string, args []string) error {
			return logcopy.Copy()
		}),
		hook(record.HookReapApp, true, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.ReapApp(cmd.Context(), dir, args[0], args[1], record.HookEnvFromOS(), f.g.open)
		}),
		hook(record.HookEnd, true, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.EndPod(cmd.Context(), dir, args[0], f.g.open)
		}),
		hook(pod.HookAwait, true, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.Await(cmd.Context(), dir, args[0], args[1])
		}),
		hook(pod.HookMountRoot, true, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.MountRoot(dir, args[0], args[1])
		}),
		hook(pod.HookPostStart, true, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.PostStart(cmd.Context(), dir, args[0], args[1])
		}),
		hook(pod.HookPreStop, true, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.PreStop(cmd.Context(), dir, args[0], args[1])
		}),
		hook(pod.HookReap, true, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.Reap(dir, args[0], args[1])
		}),
		hook(pod.HookProbe, true, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.RunProbe(cmd.Context(), dir, args[0], args[1], f.g.open)
		}),
		hook(pod.HookShutdown, false, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.Shutdown(cmd.Context(), dir, args[0], f.g.open)
		}),
		hook(pod.HookContainer, false, func(cmd *cobra.Command, dir string, args []string) error {
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			return podrun.RunContainer(cmd.Context(), dir, bin, args[0], func() error {
				_, err := daemon.SdNotify(false, daemon.SdNotifyReady)
				return err
			})
		}),
		hook(pod.HookContainerExited, false, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.ContainerExited(dir, args[0])
		}),
	)
	return cmd
}

// inHookUnit returns a usage error (exit status 2) unless this process
// runs in the unit that runs hook for the pod and app of args.
func inHookUnit(hook string, args []string) error {
	app := ""
	if len(args) > 1 {
		app = args[1]
	}
	if err := pod.CheckNames(args[0], args[1:]...); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	u, _ := pod.HookUnit(hook, args[0], app)
	err := record.CheckInUnit(hook, u)
	if errors.Is(err, record.ErrNotInUnit) {
		return &exitError{code: exitUsage, err: err}
	}
	return err
}
