package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
)

func newPodStatsCmd(f *podFlags) *cobra.Command {
	var asJSON, watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use: "stats [NAME...]",
		Example: `  unitrun pod stats
  unitrun pod stats --watch web
  unitrun pod stats --json --interval 5s web`,
		Short: "Print the CPU, memory, tasks and I/O of each app of running pods",
		Long: `Print what each app of the pods named, or of every pod running when
stats starts, uses: CPU in percent of one CPU over --interval and in
total, memory, tasks (threads) and bytes read and written, with a row
"total" per pod. The
values are those systemd accounts for each app's unit (CPUUsageNSec,
MemoryCurrent, TasksCurrent, IOReadBytes, IOWriteBytes); where the
manager accounts nothing (a user manager on a cgroup v1 host, such as
the embedded one there), they are summed from /proc over the processes
in the unit's cgroup. "-" stands for a value not known.

stats takes two samples --interval apart and prints the second, once, as
"podman pod stats --no-stream" does; --watch prints a sample every
--interval until interrupted. Piped, each row is one tab-separated line:
pod, app, CPU %, CPU time (seconds), memory, tasks, read and written
bytes, in plain numbers. --json prints each pod's sample as one JSON
object on one line (docs/pods.md, Stats).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval <= 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("--interval %s: must be a duration above 0 (500ms, 2s)", interval)}
			}
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				names := args
				if len(names) == 0 {
					var err error
					if names, err = runningPods(r.StateDir); err != nil {
						return failed(err)
					}
				}
				prev, err := samples(cmd.Context(), r, names)
				if err != nil {
					return failed(err)
				}
				for {
					select {
					case <-cmd.Context().Done():
						return cmd.Context().Err()
					case <-time.After(interval):
					}
					cur, err := samples(cmd.Context(), r, names)
					if err != nil {
						return failed(err)
					}
					for i := range cur {
						cur[i].Since(prev[i])
					}
					if err := printStats(cmd.OutOrStdout(), cur, asJSON, watch); err != nil || !watch {
						return err
					}
					prev = cur
				}
			})
		},
	}
	fl := cmd.Flags()
	jsonFlag(cmd, &asJSON, "print each pod's sample as JSON, one object a line")
	fl.BoolVarP(&watch, "watch", "w", false, "print a sample every --interval until interrupted")
	fl.DurationVar(&interval, "interval", time.Second, "the time between two samples, over which CPU % is measured")
	return cmd
}

// runningPods returns the names of the pods that run.
func runningPods(stateDir string) ([]string, error) {
	pods, err := pod.List(stateDir)
	var names []string
	for _, s := range pods {
		if s.Phase == pod.PodRunning {
			names = append(names, s.Name)
		}
	}
	return names, err
}

// samples returns a sample of the usage of each of pods.
func samples(ctx context.Context, r *podrun.Runner, pods []string) ([]podrun.Stats, error) {
	var list []podrun.Stats
	for _, name := range pods {
		s, err := r.Stats(ctx, name)
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	return list, nil
}

// printStats prints samples as "pod stats" does; again says samples
// follow, which on a terminal replace the previous ones.
func printStats(w io.Writer, samples []podrun.Stats, asJSON, again bool) error {
	if asJSON {
		for _, s := range samples {
			if err := printLine(w, s); err != nil {
				return err
			}
		}
		return nil
	}
	t := newTerm(w)
	var rows [][]string
	for _, s := range samples {
		for _, a := range s.Apps {
			rows = append(rows, usageRow(t.tty, s.Pod, a.Name, a.Usage))
		}
		rows = append(rows, usageRow(t.tty, s.Pod, "total", s.Total))
	}
	if t.tty && again {
		io.WriteString(w, "\x1b[H\x1b[2J") // home, clear the screen
	}
	return t.table([]string{"POD", "APP", "CPU %", "CPU", "MEM", "TASKS", "READ", "WRITTEN"}, rows, -1)
}

// usageRow is the row of "pod stats" of an app (or, named "total", of the
// pod) with usage u: human units on a terminal, plain numbers elsewhere.
func usageRow(human bool, podName, app string, u podrun.Usage) []string {
	if app == "" {
		app = "-" // an isolated pod's apps together
	}
	num := func(v *uint64, unit func(uint64) string) string {
		switch {
		case v == nil:
			return "-"
		case human && unit != nil:
			return unit(*v)
		}
		return fmt.Sprint(*v)
	}
	percent := "-"
	if u.CPUPercent != nil {
		percent = fmt.Sprintf("%.2f", *u.CPUPercent)
		if human {
			percent += "%"
		}
	}
	cpu := "-"
	if u.CPUNSec != nil {
		cpu = fmt.Sprintf("%.3f", time.Duration(*u.CPUNSec).Seconds())
		if human {
			cpu += "s"
		}
	}
	return []string{podName, app, percent, cpu, num(u.MemoryBytes, bytesText), num(u.Tasks, nil), num(u.IOReadBytes, bytesText), num(u.IOWriteBytes, bytesText)}
}

// bytesText is n bytes in binary units: "512B", "1.5KiB", "20.0MiB".
func bytesText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, exp := float64(n)/unit, 0
	for v >= unit && exp < 4 {
		v /= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", v, "KMGTP"[exp])
}

func newPodTopCmd(f *podFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "top NAME",
		Example: `  unitrun pod top web`,
		Short:   "List the processes of each app of a pod",
		Long: `List the processes in each app unit's cgroup, as systemd lists them
(systemd-cgls, systemctl status), with the app's hooks among them: app,
process id, user, CPU time (user and system) and command line. An
isolated pod's processes are those of its container service, app "-".
Piped, each process is one tab-separated line with the CPU time in
seconds; --json prints a JSON array.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				procs, err := r.Top(cmd.Context(), args[0])
				if err != nil {
					return failed(err)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), procs)
				}
				t := newTerm(cmd.OutOrStdout())
				var rows [][]string
				for _, p := range procs {
					app, cpu := p.App, fmt.Sprintf("%.2f", p.CPU.Seconds())
					if app == "" {
						app = "-"
					}
					if t.tty {
						cpu += "s"
					}
					rows = append(rows, []string{app, fmt.Sprint(p.PID), p.User, cpu, p.Command})
				}
				return t.table([]string{"APP", "PID", "USER", "TIME", "COMMAND"}, rows, -1)
			})
		},
	}
	jsonFlag(cmd, &asJSON, "print the processes as JSON")
	return cmd
}
