package dist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// PodUnit is the template unit that runs an installed pod, an instance a
// pod: unitrun-pod@NAME.service runs the manifest PodsDir/NAME.yaml.
const PodUnit = "unitrun-pod@.service"

// Where the shipped PodUnit takes installed pods from and keeps their
// state; PodInstall writes the unit with its own.
const (
	PodsDir      = "/etc/unitrun/pods"
	PodsStateDir = "/var/lib/unitrun/pods"
)

// PodInstall says where "unitrun pod install" puts a pod that runs at
// boot, and what runs it.
type PodInstall struct {
	// Binary is the unitrun that PodUnit runs; Manager the --manager it
	// runs it with: the manager that runs PodUnit.
	Binary, Manager string
	// PodsDir holds the installed manifests, NAME.yaml; StateDir is the
	// pods' state directory; ImageDir the image store of their images;
	// UnitDir is where PodUnit goes.
	PodsDir, StateDir, ImageDir, UnitDir string
	// Runtime enables the pod until reboot only (in /run).
	Runtime bool
	// Now also starts the pod.
	Now bool
}

// Instance is the unit that runs the installed pod name.
func (in *PodInstall) Instance(name string) string {
	return strings.Replace(PodUnit, "@", "@"+name, 1)
}

// Manifest is the installed manifest of pod name.
func (in *PodInstall) Manifest(name string) string {
	return filepath.Join(in.PodsDir, name+".yaml")
}

// unit is PodUnit as this install runs it.
func (in *PodInstall) unit() ([]byte, error) {
	text, err := fs.ReadFile(Systemd, "systemd/"+PodUnit)
	if err != nil {
		return nil, err
	}
	for _, r := range [][2]string{
		{InstalledBinary + " ", unit.QuoteArg(in.Binary) + " "},
		{"--manager=system", unit.QuoteArg("--manager=" + in.Manager)},
		{"--state-dir " + PodsStateDir, "--state-dir " + unit.QuoteArg(in.StateDir)},
		{"--image-dir " + image.DefaultDir, "--image-dir " + unit.QuoteArg(in.ImageDir)},
		{"WorkingDirectory=" + PodsDir, "WorkingDirectory=" + unit.EscapeSpecifiers(in.PodsDir)},
	} {
		if !bytes.Contains(text, []byte(r[0])) {
			return nil, fmt.Errorf("%s: no %q to replace", PodUnit, r[0])
		}
		text = bytes.ReplaceAll(text, []byte(r[0]), []byte(r[1]))
	}
	return text, nil
}

// Install writes the manifest of pod name to PodsDir (root's alone: it
// holds the apps' env) and PodUnit to UnitDir, creating the directories
// they go to, reloads mgr and enables the pod's instance of PodUnit; with
// Now, it starts it, waiting until the pod has started, or failed to. A manifest
// installed before is replaced. If a step fails, Install takes back what
// it did before.
func (in *PodInstall) Install(ctx context.Context, mgr *manager.Conn, name string, manifest []byte) (err error) {
	var w written
	defer func() {
		if err != nil {
			if uerr := w.undo(context.WithoutCancel(ctx), mgr); uerr != nil {
				err = fmt.Errorf("%w; taking back what was installed: %w", err, uerr)
			}
		}
	}()
	text, err := in.unit()
	if err != nil {
		return err
	}
	if err := w.file(in.Manifest(name), manifest, 0o600); err != nil {
		return err
	}
	if err := w.file(filepath.Join(in.UnitDir, PodUnit), text, 0o644); err != nil {
		return err
	}
	if err := mgr.Reload(ctx); err != nil {
		return err
	}
	instance := in.Instance(name)
	state, _ := mgr.UnitFileState(ctx, instance)
	if err := mgr.EnableUnitFiles(ctx, []string{instance}, in.Runtime); err != nil {
		return fmt.Errorf("enable %s: %w", instance, err)
	}
	if !strings.HasPrefix(state, "enabled") {
		w.enabled, w.runtime = []string{instance}, in.Runtime
	}
	if in.Now {
		// The start job ends with the unit's first run: a pod that
		// fails to start fails it, where a wait for the unit's runs
		// would wait through every run Restart= makes, forever.
		if err := mgr.RunJob(ctx, instance, mgr.StartUnit); err != nil {
			return fmt.Errorf("start %s: %w; unitrun pod status --state-dir %s %s says why", instance, err, in.StateDir, name)
		}
	}
	return nil
}

// Uninstall stops the installed pod name's unit (which stops the pod),
// resets it if it failed (so that it is unloaded), disables it and removes its manifest, and PodUnit too once no manifest
// is left in PodsDir; then it reloads mgr. What is already gone is not an
// error. The pod's state is the caller's to remove.
func (in *PodInstall) Uninstall(ctx context.Context, mgr *manager.Conn, name string) error {
	instance := in.Instance(name)
	var errs []error
	if err := mgr.RunJob(ctx, instance, mgr.StopUnit); err != nil && !manager.IsNoSuchUnit(err) {
		errs = append(errs, fmt.Errorf("stop %s: %w", instance, err))
	}
	// A stop while the unit starts kills its pod run, which fails the
	// unit, as does a failed start: a failed unit stays loaded.
	if err := mgr.ResetFailedUnit(ctx, instance); err != nil && !manager.IsNoSuchUnit(err) {
		errs = append(errs, fmt.Errorf("reset %s: %w", instance, err))
	}
	template := filepath.Join(in.UnitDir, PodUnit)
	if _, err := os.Lstat(template); err == nil {
		if err := mgr.DisableUnitFiles(ctx, []string{instance}, in.Runtime); err != nil {
			errs = append(errs, fmt.Errorf("disable %s: %w", instance, err))
		}
	}
	errs = append(errs, removeFile(in.Manifest(name)))
	if left, err := filepath.Glob(filepath.Join(in.PodsDir, "*.yaml")); err == nil && len(left) == 0 {
		errs = append(errs, removeFile(template))
	}
	errs = append(errs, mgr.Reload(ctx))
	return errors.Join(errs...)
}
