package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/kube"
	"github.com/unitrun/unitrun/pod/podrun"
	"github.com/unitrun/unitrun/pod/record"
)

// create creates the pods of the file at path, with isolation iso instead
// of the manifest's unless it is "": the pod of a unitrun manifest, or
// those of its Kubernetes Pods, mapped with images (createPods; several
// false refuses more than one); with replace, once a manifest is valid,
// it stops and removes the pod of its name first. A bad manifest or
// isolation exits 2.
func create(ctx context.Context, r *podrun.Runner, path, iso string, images kube.Images, several, replace bool) ([]*pod.Manifest, error) {
	switch pod.Isolation(iso) {
	case "", pod.NoIsolation, pod.Namespaces:
	default:
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("--isolation %q: must be %s or %s", iso, pod.NoIsolation, pod.Namespaces)}
	}
	data, err := pod.ReadManifest(path)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if kube.IsPodYAML(data) {
		return createPods(ctx, r, replace, path, data, iso, images, several)
	}
	createWith := r.CreateWith
	if replace {
		createWith = r.Replace
	}
	m, err := createWith(ctx, data, pod.Isolation(iso))
	if err != nil {
		return nil, createError(err, path, func(msg string) string { return msg })
	}
	return []*pod.Manifest{m}, nil
}

// createError is the error of a pod's create from the file at path that
// failed, where being path (and the Pod, of a Kubernetes file) and fields
// writing the manifest's field paths as the file names them. A bad
// manifest exits 2, with every field's error, the failed pulls of other
// apps' images among them; failed pulls alone name their fields as a bad
// manifest does and exit 125 (128+N when a signal interrupted one); a
// name that a pod of the state dir has exits 125 and says how to replace
// it.
func createError(err error, where string, fields func(string) string) error {
	if invalid := (*podrun.InvalidError)(nil); errors.As(err, &invalid) {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: %s", where, fields(invalid.Err.Error()))}
	}
	if pull := (*podrun.PullError)(nil); errors.As(err, &pull) {
		return failed(fmt.Errorf("%s: %w", where, &toldError{msg: fields(err.Error()), err: err}))
	}
	if exists := (*podrun.ExistsError)(nil); errors.As(err, &exists) {
		return &exitError{code: exitFailed, err: fmt.Errorf("%w: remove it first (unitrun pod rm), or give --replace, which stops and removes it", err)}
	}
	return failed(err)
}

// A toldError is err told in other words, msg; it wraps err.
type toldError struct {
	msg string
	err error
}

func (e *toldError) Error() string { return e.msg }
func (e *toldError) Unwrap() error { return e.err }

// replaceFlag adds --replace to cmd.
func replaceFlag(cmd *cobra.Command, replace *bool) {
	cmd.Flags().BoolVar(replace, "replace", false, "if a pod of the manifest's name exists, stop and remove it first")
}

// isolationFlag adds --isolation to cmd.
func isolationFlag(cmd *cobra.Command, iso *string) {
	cmd.Flags().StringVar(iso, "isolation", "", fmt.Sprintf("run the pod per %s (on the manager) or %s (under a systemd of its own) instead of the manifest's isolation", pod.NoIsolation, pod.Namespaces))
}

func newPodCreateCmd(f *podFlags) *cobra.Command {
	var asJSON, replace bool
	var iso string
	images := kube.Images{}
	cmd := &cobra.Command{
		Use: "create FILE",
		Example: `  unitrun pod create web.yaml
  unitrun pod create --isolation namespaces web.yaml
  unitrun pod create --state-dir /var/lib/unitrun web.yaml
  unitrun pod create --image nginx=host pods.yaml   # Kubernetes Pods`,
		Short: "Validate a manifest and prepare its pod: write its units and state, start nothing",
		Long: `Validate the manifest FILE and prepare its pod: write its units and
state, start nothing, and print its name. FILE may instead hold Kubernetes
Pods (apiVersion: v1, kind: Pod), one a YAML document: each becomes a pod
named after its metadata.name, mapped as unitrun-node maps a Pod, its
images by --image (docs/pods.md, Kubernetes Pods); every Pod is checked
before any is created.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				showPulls(r, newProgress(cmd.ErrOrStderr(), cmd.OutOrStdout(), asJSON))
				ms, err := create(cmd.Context(), r, args[0], iso, images, true, replace)
				if err != nil {
					return err
				}
				return printCreated(cmd, r, ms, asJSON)
			})
		},
	}
	jsonFlag(cmd, &asJSON, "print the created pod's status as JSON instead of its name")
	isolationFlag(cmd, &iso)
	replaceFlag(cmd, &replace)
	imageFlag(cmd, images)
	imageDirFlag(cmd, &f.imageDir)
	return cmd
}

func newPodStartCmd(f *podFlags) *cobra.Command {
	var policy string
	var asJSON bool
	cmd := &cobra.Command{
		Use: "start NAME",
		Example: `  unitrun pod start web
  unitrun pod start --exit-policy any web`,
		Short: "Start a created pod and return once its apps have started",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkExitPolicy(policy); err != nil {
				return err
			}
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				if err := r.Start(cmd.Context(), args[0], record.ExitPolicy(policy)); err != nil || !asJSON {
					return failed(err)
				}
				return printPod(cmd, r, args[0])
			})
		},
	}
	exitPolicyFlag(cmd, &policy)
	jsonFlag(cmd, &asJSON, "print the started pod's status as JSON")
	return cmd
}

func newPodRunCmd(f *podFlags) *cobra.Command {
	var policy, iso string
	var detach, asJSON, quiet, replace bool
	images := kube.Images{}
	cmd := &cobra.Command{
		Use: "run FILE",
		Example: `  unitrun pod run web.yaml
  unitrun pod run --detach --exit-policy all web.yaml
  unitrun pod run --image nginx=host simple-pod.yaml   # a Kubernetes Pod`,
		Short: "Create and start a pod, stream its apps' output and exit with its exit code",
		Long: `Create the pod of FILE and start it. Without --detach, print every line
the apps write, prefixed "APP | ", until the pod ends, and exit with the
pod's exit code: 0 if every app succeeded, else the exit code of the first
app that failed (128+N for a signal N). Ctrl-C, SIGTERM or SIGHUP (a
terminal that closed) stops the pod: the apps' output is printed until the
pod has ended, every exit is recorded as it happened, and pod run exits
130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP),
so that "pod run web.yaml && next" stops at an interrupt.
With --detach, print the pod's name and return once its apps have started.

FILE may instead hold a Kubernetes Pod (apiVersion: v1, kind: Pod),
mapped as unitrun-node maps it, its images by --image; a file of several
Pods, one a YAML document, runs them all with --detach (docs/pods.md,
Kubernetes Pods).

A pull of an app's image that downloads shows its progress on stderr as
"image pull" does. While it waits, it shows each app's state on stderr: on a terminal as a
block redrawn in place (state, exit code, restarts, elapsed time), else as
one timestamped line per change ("... app api running"). -q shows none;
--json prints each change on stdout as a JSON object on one line, the
last one the pod's end (as "pod events --json" does; docs/pods.md,
Events), and the apps' output on stderr; with --detach, the started
pod's status.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkExitPolicy(policy); err != nil {
				return err
			}
			sigs := notifyInterrupts()
			defer sigs.stop()
			ctx := cmd.Context()
			r, done, err := f.runner(ctx)
			if err != nil {
				return err
			}
			defer done()
			showPulls(r, newProgress(cmd.ErrOrStderr(), cmd.OutOrStdout(), quiet || asJSON))
			ms, err := create(ctx, r, args[0], iso, images, detach, replace)
			if err != nil {
				return err
			}
			if len(ms) > 1 {
				return startPods(cmd, r, ms, record.ExitPolicy(policy), asJSON)
			}
			m := ms[0]
			if err := r.Start(ctx, m.Name, record.ExitPolicy(policy)); err != nil {
				if ended := (*podrun.EndedError)(nil); errors.As(err, &ended) && !detach {
					// The pod failed while it started: runAttached
					// prints its output and exits with its code.
					return runAttached(cmd, r, m, sigs, asJSON, quiet)
				}
				if err := interruptedStart(r, m.Name, sigs, err); err != nil {
					return err
				}
				// A signal ended the start of a pod that has begun to
				// run: runAttached stops it and waits for its end.
				return runAttached(cmd, r, m, sigs, asJSON, quiet)
			}
			if detach && asJSON {
				return printPod(cmd, r, m.Name)
			}
			if detach {
				fmt.Fprintln(cmd.OutOrStdout(), m.Name)
				return nil
			}
			return runAttached(cmd, r, m, sigs, asJSON, quiet)
		},
	}
	exitPolicyFlag(cmd, &policy)
	cmd.Flags().BoolVarP(&detach, "detach", "d", false, "return once the pod has started")
	jsonFlag(cmd, &asJSON, "print each change as a JSON object a line on stdout (with --detach, the started pod's status); the apps' output goes to stderr")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "show no progress")
	isolationFlag(cmd, &iso)
	replaceFlag(cmd, &replace)
	imageFlag(cmd, images)
	imageDirFlag(cmd, &f.imageDir)
	return cmd
}

// interruptedStart returns the exit of "pod run" whose start of pod name
// failed with err, or nil if a signal ended the start of a pod that has
// begun to run. If a signal ended it before the pod began to run, the pod
// is removed and the exit status is 128 plus the signal's number.
func interruptedStart(r *podrun.Runner, name string, sigs *interrupts, err error) error {
	sig := sigs.received()
	if sig == 0 {
		return failed(err)
	}
	s, rerr := pod.ReadPod(r.StateDir, name)
	if rerr != nil {
		return failed(err)
	}
	if s.Phase != pod.PodPending {
		return nil
	}
	if err := r.Remove(context.Background(), name, false); err != nil {
		return failed(err)
	}
	return &exitError{code: 128 + int(sig)}
}

// attach streams the output of m's apps to w until the pod ends and
// returns the pod's exit.
func attach(ctx context.Context, r *podrun.Runner, m *pod.Manifest, w io.Writer) error {
	ended := func() bool {
		_, ended, err := r.Ended(ctx, m.Name)
		return err != nil || ended
	}
	apps := make([]string, len(m.Apps))
	for i, a := range m.Apps {
		apps[i] = a.Name
	}
	if err := pod.Logs(ctx, r.StateDir, m.Name, apps, w, pod.LogOptions{Prefix: true, Follow: true}, ended); err != nil {
		return failed(err)
	}
	s, err := r.Status(ctx, m.Name)
	if err != nil {
		return failed(err)
	}
	return podExit(s)
}

func newPodStopCmd(f *podFlags) *cobra.Command {
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use: "stop NAME",
		Example: `  unitrun pod stop web
  unitrun pod stop --timeout 30s web`,
		Short: "Stop a pod gracefully, recording every app's exit, and exit with its exit code",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				ctx := cmd.Context()
				s, err := r.Stop(ctx, args[0], timeout)
				if sig, ok := interruptedBy(ctx); ok && err != nil {
					// unitrun was interrupted, not the stop: the
					// stop jobs are systemd's, and go on.
					return &exitError{code: 128 + int(sig), err: fmt.Errorf("stopped waiting for pod %s, whose stop goes on: %w", args[0], context.Cause(ctx))}
				}
				if err != nil {
					return failed(err)
				}
				if asJSON {
					if err := printJSON(cmd.OutOrStdout(), newPodView(r.StateDir, s)); err != nil {
						return err
					}
				}
				return podExit(s)
			})
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "kill what is left of the pod after this long (0: wait for the apps' stop timeouts)")
	jsonFlag(cmd, &asJSON, "print the stopped pod's status as JSON")
	return cmd
}

// rmRefused words pod rm's refusal of a pod that is running, or whose
// state cannot be read, with the command and the flag that remove it.
func rmRefused(err error) error {
	refused := (*podrun.NotRemovableError)(nil)
	switch {
	case !errors.As(err, &refused):
		return err
	case refused.Err == nil:
		return fmt.Errorf("pod %s is running: stop it first (unitrun pod stop %[1]s), or give --force, which stops it", refused.Name)
	default:
		return fmt.Errorf("pod %s: %w; give --force (unitrun pod rm --force %[1]s), which removes the pod whatever its state", refused.Name, refused.Err)
	}
}

func newPodRmCmd(f *podFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use: "rm NAME",
		Example: `  unitrun pod rm web
  unitrun pod rm --force web`,
		Short: "Remove a pod: its units, state and logs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				return failed(rmRefused(r.Remove(cmd.Context(), args[0], force)))
			})
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "stop a running pod first")
	return cmd
}
