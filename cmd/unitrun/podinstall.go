package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/dist"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/kube"
	"github.com/unitrun/unitrun/pod/podrun"
)

// podInstallFlags are the flags of pod install and pod uninstall.
type podInstallFlags struct {
	podsDir, unitDir, imageDir string
	runtime, now               bool
}

func (pf *podInstallFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&pf.podsDir, "pods-dir", dist.PodsDir, "directory of the installed manifests, NAME.yaml")
	cmd.Flags().StringVar(&pf.unitDir, "unit-dir", "/etc/systemd/system", "directory of the unit that runs installed pods, "+dist.PodUnit+": one the manager loads units from")
	cmd.Flags().BoolVar(&pf.runtime, "runtime", false, "enable until reboot only (in /run), not persistently")
}

// install returns what pod install and uninstall do, from the flags: the
// directories must be absolute (--image-dir may be a relative
// $UNITRUN_IMAGE_DIR by default, and must not be a file: checkImageDir);
// --state-dir is dist.PodsStateDir unless given.
func (pf *podInstallFlags) install(cmd *cobra.Command, f *podFlags) (*dist.PodInstall, error) {
	for _, name := range []string{"pods-dir", "unit-dir", "state-dir", "image-dir"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && !filepath.IsAbs(fl.Value.String()) {
			return nil, usageError(fmt.Errorf("--%s %q: must be an absolute path", name, fl.Value))
		}
	}
	if cmd.Flags().Lookup("image-dir") != nil {
		if err := checkImageDir(pf.imageDir); err != nil {
			return nil, err
		}
	}
	in := &dist.PodInstall{PodsDir: filepath.Clean(pf.podsDir), UnitDir: filepath.Clean(pf.unitDir), StateDir: dist.PodsStateDir, ImageDir: filepath.Clean(pf.imageDir), Runtime: pf.runtime, Now: pf.now}
	if cmd.Flags().Changed("state-dir") {
		in.StateDir = filepath.Clean(f.stateDir)
	}
	return in, nil
}

// checkUnitDir refuses (exit 2) a --unit-dir the manager does not read
// units from, or one it empties itself (its transient and generator
// directories): a pod installed there would not start at boot, and a
// template unit elsewhere in the manager's unit path would run it.
func checkUnitDir(ctx context.Context, mgr *manager.Conn, dir string) error {
	paths, err := mgr.UnitPath(ctx)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("read the manager's unit path: %w", err)}
	}
	var kept []string
	for _, p := range paths {
		switch filepath.Base(p) {
		case "transient", "generator", "generator.early", "generator.late":
			continue
		}
		kept = append(kept, p)
	}
	real, rerr := filepath.EvalSymlinks(dir)
	for _, p := range kept {
		if p == dir {
			return nil
		}
		if rp, err := filepath.EvalSymlinks(p); rerr == nil && err == nil && rp == real {
			return nil
		}
	}
	return usageError(fmt.Errorf("--unit-dir %s: the manager does not load units from it at boot, so the pod would not start; give --unit-dir one of the directories it does: %s", dir, strings.Join(kept, " ")))
}

func newPodInstallCmd(f *podFlags) *cobra.Command {
	pf := &podInstallFlags{}
	cmd := &cobra.Command{
		Use: "install FILE",
		Example: `  unitrun pod install --now web.yaml
  unitrun pod status --state-dir /var/lib/unitrun/pods web`,
		Short: "Install a pod that runs at boot: its manifest in /etc/unitrun/pods, run by unitrun-pod@NAME.service",
		Long: `Validate the manifest FILE and pull its apps' images into --image-dir under
their pull policies (as pod create does, on this host, with its exit
statuses), leased to the pod as pod create leases them (image rm and
image prune keep them until the pod is removed or uninstalled), copy it
to --pods-dir as NAME.yaml, write the template unit
` + dist.PodUnit + ` (running this unitrun, on the manager it reaches, with
--state-dir and --image-dir) to --unit-dir, and enable
unitrun-pod@NAME.service, wanted by the manager's default.target and
started after network-online.target: at each boot it runs "unitrun pod
run --detach --replace" of the manifest, and runs it again if the pod's
graph fails to start. With --now, also start it, returning once the pod has started.
Installed pods keep their state in --state-dir, by default the persistent
` + dist.PodsStateDir + `. Installing a pod again replaces its manifest; the
running pod is replaced at its unit's next start. "unitrun pod uninstall
NAME" takes it all back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := pf.install(cmd, f)
			if err != nil {
				return err
			}
			data, err := pod.ReadManifest(args[0])
			if err != nil {
				return usageError(err)
			}
			if kube.IsPodYAML(data) {
				return usageError(fmt.Errorf("%s holds Kubernetes YAML: pod install takes a unitrun manifest only (pod run and pod create take Pods)", args[0]))
			}
			// What pod create refuses, and the images it would pull,
			// now rather than at boot; the images leased to the pod
			// from now on, so that no prune takes them before it starts.
			r := &podrun.Runner{StateDir: in.StateDir, ImageDir: in.ImageDir, Pull: pullAppImage}
			showPulls(r, newProgress(cmd.ErrOrStderr(), cmd.OutOrStdout(), false))
			var installErr error
			m, err := r.Install(cmd.Context(), data, "", func(m *pod.Manifest) error {
				installErr = installPod(cmd, f, in, m.Name, data)
				return installErr
			})
			switch {
			case installErr != nil:
				return installErr
			case err != nil:
				return createError(err, args[0], func(msg string) string { return msg })
			}
			fmt.Fprintln(cmd.OutOrStdout(), in.Instance(m.Name))
			return nil
		},
	}
	pf.add(cmd)
	cmd.Flags().BoolVar(&pf.now, "now", false, "also start the pod")
	imageDirFlag(cmd, &pf.imageDir)
	return cmd
}

// installPod installs pod name, whose manifest is data, as in says, on the
// manager of f: pod install's steps once the manifest is checked and its
// images are pulled.
func installPod(cmd *cobra.Command, f *podFlags, in *dist.PodInstall, name string, data []byte) error {
	var err error
	if in.Binary, err = os.Executable(); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	mgr, err := f.g.open(cmd.Context())
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	defer mgr.Close()
	if err := checkUnitDir(cmd.Context(), mgr, in.UnitDir); err != nil {
		return err
	}
	in.Manager = f.hookManager(mgr)
	if err := in.Install(cmd.Context(), mgr, name, data); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	return nil
}

func newPodUninstallCmd(f *podFlags) *cobra.Command {
	pf := &podInstallFlags{}
	cmd := &cobra.Command{
		Use:     "uninstall NAME",
		Example: "  unitrun pod uninstall web",
		Short:   "Stop, disable and remove an installed pod: its unit, manifest and state",
		Long: `Stop unitrun-pod@NAME.service (which stops the pod), disable it, remove
the manifest NAME.yaml from --pods-dir, the template unit once no pod is
installed, and the pod with its state from --state-dir (by default
` + dist.PodsStateDir + `), and its leases on its images: in the store its
state names, or in --image-dir where it was never started. What is
already gone is not an error: uninstalling twice is fine.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := pf.install(cmd, f)
			if err != nil {
				return err
			}
			if err := pod.CheckNames(args[0]); err != nil {
				return usageError(err)
			}
			return f.withRunner(cmd, func(r *podrun.Runner) error {
				if err := in.Uninstall(cmd.Context(), r.Mgr, args[0]); err != nil {
					return &exitError{code: exitFailed, err: err}
				}
				r.StateDir, r.ImageDir = in.StateDir, in.ImageDir
				err := r.Remove(cmd.Context(), args[0], true)
				if errors.As(err, new(*podrun.NoPodError)) {
					// Installed, never started: pod install's leases.
					err = r.ReleaseImages(args[0])
				}
				return failed(err)
			})
		},
	}
	pf.add(cmd)
	imageDirFlag(cmd, &pf.imageDir)
	return cmd
}
