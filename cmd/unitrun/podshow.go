package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/kube"
	"github.com/unitrun/unitrun/pod/podrun"
	"github.com/unitrun/unitrun/pod/record"
)

// podView is the --json form of a pod's status.
type podView struct {
	Name       string    `json:"name"`
	Phase      pod.Phase `json:"phase"`
	ExitCode   *int      `json:"exit_code"`
	ExitPolicy string    `json:"exit_policy"`
	// Ready is the pod's Ready condition: running, every app ready.
	Ready      bool       `json:"ready"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Apps       []appView  `json:"apps"`
	// FromSystemd says the pod's end could not be recorded: phase and
	// exit code are read back from systemd.
	FromSystemd bool `json:"from_systemd,omitempty"`
}

// appView is the --json form of an app's status.
type appView struct {
	Name string `json:"name"`
	// Image is the app's image as its manifest names it, and ImageID
	// the ID (manifest digest) its pod's creation resolved it to, as in
	// the pod's spec; both empty for an app without an image.
	Image      string          `json:"image,omitempty"`
	ImageID    string          `json:"image_id,omitempty"`
	State      record.AppState `json:"state"`
	ExitCode   *int            `json:"exit_code"`
	Signal     string          `json:"signal,omitempty"`
	Result     string          `json:"result,omitempty"`
	Message    string          `json:"message,omitempty"`
	Restarts   int             `json:"restarts"`
	StartedAt  *time.Time      `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at"`
	// Ready says the app runs and its startup and readiness probes, if
	// any, say it is ready (an init app: it has succeeded).
	Ready bool `json:"ready"`
	// Probe, StartupProbe and ReadinessProbe are set once the app's
	// liveness, startup and readiness probes have run.
	Probe          *record.ProbeStatus `json:"probe,omitempty"`
	StartupProbe   *record.ProbeStatus `json:"startup_probe,omitempty"`
	ReadinessProbe *record.ProbeStatus `json:"readiness_probe,omitempty"`
	// FromSystemd says the app's last exit could not be recorded: it is
	// read back from the app's unit.
	FromSystemd bool `json:"from_systemd,omitempty"`
}

// timePtr is t, or nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// newPodView is the --json form of pod s, whose apps' images the spec of
// the pod in stateDir gives (podImages).
func newPodView(stateDir string, s pod.PodStatus) podView {
	v := podView{Name: s.Name, Phase: s.Phase, ExitCode: s.ExitCode, ExitPolicy: string(s.ExitPolicy), Ready: s.Ready, StartedAt: timePtr(s.StartedAt), FinishedAt: timePtr(s.FinishedAt), Apps: []appView{}, FromSystemd: s.FromSystemd}
	images := podImages(stateDir, s.Name)
	for _, a := range s.Apps {
		img := images[a.Name]
		v.Apps = append(v.Apps, appView{a.Name, img.Image, img.ImageID, a.State, a.ExitCode, a.Signal, a.Result, a.Message, a.Restarts, timePtr(a.StartedAt), timePtr(a.FinishedAt), a.Ready, a.Probe, a.Startup, a.Readiness, a.FromSystemd})
	}
	return v
}

// podImages returns, by app, the apps of pod name in stateDir that have
// an image, from its spec (manifest.json), which alone records their
// image IDs: none if it cannot be read, the status being what is asked.
func podImages(stateDir, name string) map[string]pod.App {
	images := map[string]pod.App{}
	m, err := pod.LoadSpec(stateDir, name)
	if err != nil {
		return images
	}
	for _, a := range m.Apps {
		if a.Image != "" {
			images[a.Name] = a
		}
	}
	return images
}

// imageCell prints an app's image, or "-" for none.
func imageCell(a pod.App) string {
	if a.Image == "" {
		return "-"
	}
	return a.Image
}

// noteFromSystemd tells on w which ends of pod s are systemd's, read back
// because their records could not be written; nothing if none is.
func noteFromSystemd(w io.Writer, s pod.PodStatus) {
	var what []string
	if s.FromSystemd {
		what = append(what, "the pod's end")
	}
	for _, a := range s.Apps {
		if a.FromSystemd {
			what = append(what, "the last exit of app "+a.Name)
		}
	}
	if len(what) > 0 {
		fmt.Fprintf(w, "unitrun: pod %s: %s could not be recorded (is the state dir full?): shown as systemd has it\n", s.Name, strings.Join(what, ", "))
	}
}

// probeCell prints a probe's last result and its consecutive failures, or
// "-" for an app whose probe has not run.
func probeCell(p *record.ProbeStatus) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%s, %d failing", p.LastResult, p.ConsecutiveFailures)
}

// yesNo prints b as yes or no.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// code prints an exit code, or "-".
func code(c *int) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprint(*c)
}

func newPodStatusCmd(f *podFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "status NAME",
		Example: `  unitrun pod status web
  unitrun pod status --json web`,
		Short: "Print a pod's phase and each app's state, exit code and restarts",
		Long: `Print a pod's phase and a table of its apps. Piped, the first line is the
pod's, as in "pod list" (name, phase, exit code, apps), then one
tab-separated line per app: name, state, exit code, restarts, started,
finished, probe (the liveness probe's last result), ready, image (as the
manifest names it; --json also gives its ID); "-" stands for none.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				s, err := r.Status(cmd.Context(), args[0])
				if err != nil {
					return failed(err)
				}
				noteFromSystemd(cmd.ErrOrStderr(), s)
				w := cmd.OutOrStdout()
				if asJSON {
					return printJSON(w, newPodView(r.StateDir, s))
				}
				t := newTerm(w)
				if t.tty {
					fmt.Fprintf(w, "pod %s: %s, exit code %s\n", s.Name, t.paint(string(s.Phase)), code(s.ExitCode))
				} else if err := t.table(nil, [][]string{podRow(s)}, -1); err != nil {
					return err
				}
				images := podImages(r.StateDir, s.Name)
				var rows [][]string
				for _, a := range s.Apps {
					rows = append(rows, []string{a.Name, string(a.State), code(a.ExitCode), fmt.Sprint(a.Restarts), stamp(a.StartedAt), stamp(a.FinishedAt), probeCell(a.Probe), yesNo(a.Ready), imageCell(images[a.Name])})
				}
				return t.table([]string{"APP", "STATE", "EXIT", "RESTARTS", "STARTED", "FINISHED", "PROBE", "READY", "IMAGE"}, rows, 1)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// podRow is the row of pod s in "pod list": name, phase, exit code and
// number of apps.
func podRow(s pod.PodStatus) []string {
	return []string{s.Name, string(s.Phase), code(s.ExitCode), fmt.Sprint(len(s.Apps))}
}

// stamp formats t for a table, "-" if zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}

func newPodListCmd(f *podFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "list",
		Example: `  unitrun pod list
  unitrun pod list --json`,
		Short: "List the pods and their phases",
		Long: `List the pods under --state-dir. Piped, each pod is one tab-separated line
with no header: name, phase, exit code ("-" until it ended), number of apps.
A pod whose state cannot be read is named on stderr instead, after the
others are listed, and the exit status is then 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := f.dir()
			if err != nil {
				return err
			}
			pods, lerr := pod.List(dir)
			if pe := (*fs.PathError)(nil); errors.As(lerr, &pe) && pe.Path == filepath.Join(dir, "pods") {
				// The state dir's list of pods cannot be read.
				return &exitError{code: exitFailed, err: flagPathError("--state-dir", dir, lerr)}
			}
			if err := printPods(cmd.OutOrStdout(), dir, pods, asJSON); err != nil {
				return err
			}
			if lerr != nil {
				// The pods that can be read are listed; each other one
				// is named on stderr, and the exit status is 1.
				return &exitError{code: 1, err: fmt.Errorf("%w\n(\"unitrun pod rm --force NAME\" removes a pod whatever its state)", lerr)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// printPods prints pods, of state dir stateDir, as "pod list" does.
func printPods(w io.Writer, stateDir string, pods []pod.PodStatus, asJSON bool) error {
	if asJSON {
		views := []podView{}
		for _, s := range pods {
			views = append(views, newPodView(stateDir, s))
		}
		return printJSON(w, views)
	}
	var rows [][]string
	for _, s := range pods {
		rows = append(rows, podRow(s))
	}
	return newTerm(w).table([]string{"POD", "PHASE", "EXIT", "APPS"}, rows, 1)
}

func newPodLogsCmd(f *podFlags) *cobra.Command {
	var o pod.LogOptions
	var since string
	var tail int
	cmd := &cobra.Command{
		Use: "logs NAME [APP]",
		Example: `  unitrun pod logs web
  unitrun pod logs -f web server
  unitrun pod logs --previous --timestamps web server
  unitrun pod logs --since 10m --tail 20 web`,
		Short: `Print the output of a pod's apps, each line prefixed "APP | ", or of one app`,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			// As kubectl logs --tail: -1 (the default) every line, 0 none
			// to begin with, N the last N.
			switch {
			case tail < -1:
				return &exitError{code: exitUsage, err: fmt.Errorf("--tail %d: must be a number of lines, 0 or more, or -1 (all)", tail)}
			case tail == 0:
				o.Tail = -1
			case tail > 0:
				o.Tail = tail
			}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return &exitError{code: exitUsage, err: err}
				}
				o.Since = t
			}
			dir, err := f.dir()
			if err != nil {
				return err
			}
			m, err := (&podrun.Runner{StateDir: dir}).Manifest(args[0])
			if err != nil {
				return failed(err)
			}
			var apps []string
			app := "" // the one app asked for
			if len(args) == 2 {
				app = args[1]
				if m.App(args[1]) == nil {
					return &exitError{code: exitUsage, err: fmt.Errorf("pod %s has no app %q", m.Name, args[1])}
				}
				apps = args[1:]
			} else {
				for _, a := range m.Apps {
					apps = append(apps, a.Name)
				}
			}
			o.Prefix = len(args) == 1
			err = pod.Logs(cmd.Context(), dir, m.Name, apps, cmd.OutOrStdout(), o, pod.FollowEnds(dir, m.Name, app))
			if _, ok := interruptedBy(cmd.Context()); ok && o.Follow && errors.Is(err, context.Canceled) {
				// Following ends at an interrupt, as journalctl -f does.
				return nil
			}
			return failed(err)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.Follow, "follow", "f", false, "keep printing until the app's run ends (without APP: the pod ends) or an interrupt (exit 0)")
	fl.IntVar(&tail, "tail", -1, "print only the last N lines of each app's log to begin with (0: none, -1: all)")
	fl.StringVar(&since, "since", "", "print only the lines written at or after TIME (RFC 3339) or in the last DURATION (10m, 1h30m)")
	fl.BoolVar(&o.Timestamps, "timestamps", false, "begin each line with the time it was written (RFC 3339 with nanoseconds, UTC)")
	fl.BoolVarP(&o.Previous, "previous", "p", false, "print the app's run before its last one")
	return cmd
}

// parseSince reads --since: an RFC 3339 time, or a duration back from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--since %q: must be an RFC 3339 time (2026-01-02T15:04:05Z) or a duration of 0 or more (10m, 1h30m)", s)
	}
	return now.Add(-d), nil
}

func newPodGraphCmd(f *podFlags) *cobra.Command {
	var format string
	images := kube.Images{}
	cmd := &cobra.Command{
		Use: "graph FILE|NAME",
		Example: `  unitrun pod graph web.yaml | dot -Tsvg > web.svg
  unitrun pod graph --format mermaid web
  unitrun pod graph --image busybox=host pod.yaml   # a Kubernetes Pod`,
		Short: "Print a pod's unit graph as a Graphviz (dot) or Mermaid diagram",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := f.dir()
			if err != nil {
				return err
			}
			var m *pod.Manifest
			if _, serr := os.Stat(args[0]); serr == nil {
				if m, err = graphManifest(args[0], images, dir); err != nil {
					return err
				}
			} else if m, err = (&podrun.Runner{StateDir: dir}).Manifest(args[0]); err != nil {
				return failed(err)
			}
			out, err := pod.Diagram(pod.Nodes(m), format)
			if err != nil {
				return &exitError{code: exitUsage, err: fmt.Errorf("--format: %w", err)}
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "dot", "diagram format: dot or mermaid")
	imageFlag(cmd, images)
	return cmd
}
