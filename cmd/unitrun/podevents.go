package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
)

func newPodEventsCmd(f *podFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "events [NAME]",
		Example: `  unitrun pod events web
  unitrun pod events --json | jq .`,
		Short: "Print the changes of a pod, or of every pod, as they happen",
		Long: `Print every change of pod NAME as its records tell it, those so far
first, until the pod ends: an app's run started, ended and restarting,
ended for good (exited or failed, with its exit), a probe's check failed,
the pod ended; or, without NAME, of every pod, those created later too,
until interrupted. Each change is a line: its time (UTC, to the
millisecond, as "pod run" prints it), "pod
NAME", then the change as "pod run" shows it ("app api restarting exit
3"). --json prints each as a JSON object on one line, the objects of
"pod run --json" (docs/pods.md, Events).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				var print func(pod.PodEvent) error
				w := cmd.OutOrStdout()
				if asJSON {
					print = func(e pod.PodEvent) error { return printLine(w, e) }
				} else {
					print = func(e pod.PodEvent) error { return printEvent(w, e) }
				}
				return failed(followEvents(cmd.Context(), r, args, print))
			})
		},
	}
	jsonFlag(cmd, &asJSON, "print each change as a JSON object on one line")
	return cmd
}

// printEvent prints e as "pod events" does.
func printEvent(w io.Writer, e pod.PodEvent) error {
	text := e.String()
	if e.App != "" {
		text = "pod " + e.Pod + " " + text
	}
	_, err := fmt.Fprintf(w, "%s %s\n", e.Time.UTC().Format(stampLayout), text)
	return err
}

// followEvents reads the records of the pods named (one), or of every
// pod, every podPollInterval, and calls print with each change. It
// returns once the pod named has ended, or when ctx ends.
func followEvents(ctx context.Context, r *podrun.Runner, names []string, print func(pod.PodEvent) error) error {
	seen := map[string]*pod.PodEvents{}
	for {
		list := names
		if len(names) == 0 {
			all, err := pod.List(r.StateDir)
			if err != nil {
				return err
			}
			list = nil
			for _, s := range all {
				list = append(list, s.Name)
			}
		}
		for name := range seen {
			if !slices.Contains(list, name) {
				delete(seen, name) // removed: a pod made again under its name starts anew
			}
		}
		for _, name := range list {
			s, err := r.Status(ctx, name)
			if err != nil && len(names) > 0 {
				return err
			}
			if err != nil {
				continue // removed since it was listed
			}
			if seen[name] == nil {
				seen[name] = pod.NewPodEvents(name)
			}
			for _, e := range seen[name].Next(s, time.Now()) {
				if err := print(e); err != nil {
					return err
				}
			}
			if len(names) > 0 && s.Ended() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(podPollInterval):
		}
	}
}
