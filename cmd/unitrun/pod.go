package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
	"github.com/unitrun/unitrun/pod/record"
)

// defaultStateDir holds the pods' state unless --state-dir says otherwise.
const defaultStateDir = "/run/unitrun"

// podFlags are the flags every pod command takes.
type podFlags struct {
	g        *globals
	stateDir string
	// imageDir is the image store of apps' images (--image-dir of pod
	// create and run, whose default is $UNITRUN_IMAGE_DIR, else
	// image.DefaultDir); "" for the other commands is the same.
	imageDir string
}

func newPodCmd(g *globals) *cobra.Command {
	f := &podFlags{g: g}
	cmd := &cobra.Command{
		Use:   "pod",
		Short: "Run a group of apps as a graph of systemd units (see docs/pods.md)",
		Long: `A pod is a group of apps described by a YAML manifest, run as a graph of
systemd units with Kubernetes-like exit and restart policies. Each app's
exit status is recorded the moment it ends, under
STATE-DIR/pods/NAME/status/APP. At each start and exit the app's unit
runs unitrun-hook, the small program installed beside unitrun, or, where
there is none beside it (go run, or unitrun built alone), unitrun
itself, which takes more CPU; the unit's ExecStart= and ExecStopPost=
name which (docs/pods.md, The exit hook).`,
	}
	cmd.PersistentFlags().StringVar(&f.stateDir, "state-dir", defaultStateDir, "directory that holds the pods' state")
	cmd.AddCommand(
		newPodCreateCmd(f), newPodStartCmd(f), newPodRunCmd(f), newPodStatusCmd(f),
		newPodStopCmd(f), newPodLogsCmd(f), newPodListCmd(f), newPodRmCmd(f), newPodGraphCmd(f),
		newPodStatsCmd(f), newPodTopCmd(f), newPodEventsCmd(f),
	)
	cmd.AddCommand(newPodInstallCmd(f), newPodUninstallCmd(f))
	cmd.AddCommand(newPodExecCmd(f))
	cmd.AddCommand(newPodHookCmd(f))
	completePodArgs(cmd, f)
	return cmd
}

// dir returns the absolute state directory, which may not exist yet; one
// that is not a directory, or cannot be looked at, is an error that names
// --state-dir.
func (f *podFlags) dir() (string, error) {
	d, err := filepath.Abs(f.stateDir)
	if err != nil {
		return "", &exitError{code: exitUsage, err: err}
	}
	fi, err := os.Stat(d)
	switch {
	case err == nil && !fi.IsDir():
		return "", &exitError{code: exitFailed, err: fmt.Errorf("--state-dir %s: not a directory", d)}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", &exitError{code: exitFailed, err: flagPathError("--state-dir", d, err)}
	}
	return d, nil
}

// runner opens the manager and returns a Runner on it; close releases it.
func (f *podFlags) runner(ctx context.Context) (r *podrun.Runner, close func(), err error) {
	dir, err := f.dir()
	if err != nil {
		return nil, nil, err
	}
	if f.imageDir != "" {
		if err := checkImageDir(f.imageDir); err != nil {
			return nil, nil, err
		}
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, nil, &exitError{code: exitFailed, err: err}
	}
	mgr, err := f.g.open(ctx)
	if err != nil {
		return nil, nil, &exitError{code: exitFailed, err: err}
	}
	r = &podrun.Runner{Mgr: mgr, StateDir: dir, Binary: bin, Manager: f.hookManager(mgr), ImageDir: f.imageDir, Pull: pullAppImage}
	if r.ImageDir == "" {
		r.ImageDir = os.Getenv(envImageDir)
	}
	return r, func() { mgr.Close() }, nil
}

// withRunner reaches the manager, runs do with a runner on it and closes
// the connection.
func (f *podFlags) withRunner(cmd *cobra.Command, do func(r *podrun.Runner) error) error {
	r, done, err := f.runner(cmd.Context())
	if err != nil {
		return err
	}
	defer done()
	return do(r)
}

// hookManager is the --manager value that the pod's hooks, run by the
// manager itself, reach it with: the embedded manager by its socket, since
// the hooks do not see unitrun's --embedded-dir.
func (f *podFlags) hookManager(mgr *manager.Conn) string {
	spec := mgr.Target().Spec
	if spec == "embedded" {
		return "private:" + manager.Options{EmbeddedDir: f.g.embeddedDir}.Embedded().Socket()
	}
	return spec
}

// exitNoPod is the exit status of a pod command given a pod that does not
// exist.
const exitNoPod = 1

// failed wraps an error of a pod command in exit status 125, or exitNoPod
// for a pod that does not exist, or the pod's exit code for a pod that
// ended Failed while it started.
func failed(err error) error {
	if err == nil {
		return nil
	}
	if ee := (*exitError)(nil); errors.As(err, &ee) {
		return err
	}
	if np := (*podrun.NoPodError)(nil); errors.As(err, &np) {
		return &exitError{code: exitNoPod, err: err}
	}
	if ended := (*podrun.EndedError)(nil); errors.As(err, &ended) && ended.Status.ExitCode != nil {
		return &exitError{code: *ended.Status.ExitCode, err: err}
	}
	return &exitError{code: exitFailed, err: err}
}

// podExit is the exit of a command that waited for pod s to end.
func podExit(s pod.PodStatus) error {
	if s.ExitCode == nil || *s.ExitCode == 0 {
		return nil
	}
	return &exitError{code: *s.ExitCode}
}

// checkExitPolicy refuses an --exit-policy value that is not an exit
// policy, with exit status 2.
func checkExitPolicy(p string) error {
	if p == "" {
		return nil
	}
	if err := record.ExitPolicy(p).Check(); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--exit-policy %w", err)}
	}
	return nil
}

// exitPolicyFlag adds --exit-policy to cmd.
func exitPolicyFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "exit-policy", "", fmt.Sprintf("end the pod per %s, %s or %s instead of the manifest's exitPolicy", record.FirstFailure, record.AnyExit, record.AllExit))
}
