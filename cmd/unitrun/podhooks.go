package main

import (
	"os"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
)

// newPodHookCmds returns the hidden commands that a pod's units run.
func newPodHookCmds(f *podFlags) []*cobra.Command {
	hook := func(use string, args int, run func(cmd *cobra.Command, dir string, args []string) error) *cobra.Command {
		return &cobra.Command{
			Use:    use,
			Hidden: true,
			Args:   cobra.ExactArgs(args),
			RunE: func(cmd *cobra.Command, args []string) error {
				dir, err := f.dir()
				if err != nil {
					return err
				}
				return failed(run(cmd, dir, args))
			},
		}
	}
	return []*cobra.Command{
		hook("backoff POD APP", 2, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.WaitBackoff(cmd.Context(), dir, args[0], args[1])
		}),
		hook("exec-app POD APP", 2, func(cmd *cobra.Command, dir string, args []string) error {
			// A command that cannot be executed exits 127 or 126, as
			// with "unitrun run".
			return exitFor(podrun.ExecApp(dir, args[0], args[1]), false)
		}),
		hook("reap-app POD APP", 2, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.ReapApp(cmd.Context(), dir, args[0], args[1], pod.HookEnvFromOS(), f.g.open)
		}),
		hook("end POD", 1, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.EndPod(cmd.Context(), dir, args[0], f.g.open)
		}),
		hook("await POD APP", 2, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.Await(cmd.Context(), dir, args[0], args[1])
		}),
		hook("post-start POD APP", 2, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.PostStart(cmd.Context(), dir, args[0], args[1])
		}),
		hook("pre-stop POD APP", 2, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.PreStop(cmd.Context(), dir, args[0], args[1])
		}),
		hook("reap POD APP", 2, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.Reap(dir, args[0], args[1])
		}),
		hook("probe POD APP", 2, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.RunProbe(cmd.Context(), dir, args[0], args[1], f.g.open)
		}),
		hook("shutdown POD", 1, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.Shutdown(cmd.Context(), dir, args[0], f.g.open)
		}),
		hook("container POD", 1, func(cmd *cobra.Command, dir string, args []string) error {
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			return podrun.RunContainer(cmd.Context(), dir, bin, args[0], func() error {
				_, err := daemon.SdNotify(false, daemon.SdNotifyReady)
				return err
			})
		}),
		hook("container-exited POD", 1, func(cmd *cobra.Command, dir string, args []string) error {
			return podrun.ContainerExited(dir, args[0])
		}),
		{
			Use:    "log-copy",
			Hidden: true,
			Args:   cobra.NoArgs,
			RunE:   func(cmd *cobra.Command, args []string) error { return failed(pod.LogCopy()) },
		},
	}
}
