package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/kube"
	"github.com/unitrun/unitrun/pod/podrun"
	"github.com/unitrun/unitrun/pod/record"
)

// imageFlag adds --image to cmd.
func imageFlag(cmd *cobra.Command, images kube.Images) {
	cmd.Flags().Var(images, "image", "run the containers of a Kubernetes Pod's image NAME on that root filesystem, or on the host's (repeatable; as unitrun-node's --image)")
}

// createPods creates the pods of the Kubernetes Pods in data, the file at
// path (docs/pods.md, Kubernetes Pods): every Pod is mapped (kube.Plan)
// and checked (resolvePods) before any is created, and a pod that cannot
// be created removes those created before it. several false refuses a
// file of more than one Pod; with replace, the pod of a Pod's name is
// stopped and removed first.
func createPods(ctx context.Context, r *podrun.Runner, replace bool, path string, data []byte, iso string, images kube.Images, several bool) ([]*pod.Manifest, error) {
	plans, err := planPods(path, data, images, r.StateDir)
	if err != nil {
		return nil, err
	}
	if len(plans) > 1 && !several {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s holds %d Pods: pod run follows one pod's output; run them with --detach", path, len(plans))}
	}
	hintNearImages(r, images)
	resolved, err := resolvePods(ctx, r, path, plans, iso)
	if err != nil {
		return nil, err
	}
	var ms []*pod.Manifest
	undo := func() {
		for _, m := range ms {
			r.Remove(context.WithoutCancel(ctx), m.Name, true)
		}
	}
	for i, p := range plans {
		m, err := r.CreateResolved(ctx, resolved[i], replace)
		if err != nil {
			for _, rp := range resolved[i+1:] {
				rp.Release()
			}
			undo()
			return nil, createError(err, where(path, &p), func(msg string) string { return kube.ContainerPaths(msg, p.Inits) })
		}
		ms = append(ms, m)
		for _, d := range p.EmptyDirs {
			if err := d.MakeEmptyDir(); err != nil {
				for _, rp := range resolved[i+1:] {
					rp.Release()
				}
				undo()
				return nil, failed(fmt.Errorf("pod %s: make its emptyDir: %w", m.Name, err))
			}
		}
	}
	return ms, nil
}

// where is how an error of the pod of plan p, of the file at path, is
// told: after the path, its document and Pod.
func where(path string, p *kube.Planned) string {
	if p.Where == "" {
		return path
	}
	return path + ": " + p.Where
}

// resolvePods checks every pod of plans, of the file at path, before any
// is created (podrun.Runner.Resolve), and returns them resolved, in
// their order. Else it returns every problem of the file at once, as a
// manifest's (createError): each Pod's refusals and its images' errors
// (podrun.Runner.CheckImages), and for a Pod that maps, its manifest's
// and its images' errors, each line after its document and Pod
// (kube.Planned.Tell); exit 2, or 125 for failed pulls alone. An
// interrupt, or a failure that is no Pod's, ends it at once.
func resolvePods(ctx context.Context, r *podrun.Runner, path string, plans []kube.Planned, iso string) ([]*podrun.Resolved, error) {
	var resolved []*podrun.Resolved
	release := func() {
		for _, rp := range resolved {
			rp.Release()
		}
	}
	var lines []string
	var pulls []error
	invalid := false
	// tell adds the error of p's check to the lines, and returns the
	// error that ends the checks, if it is one.
	tell := func(p *kube.Planned, err error) error {
		var inv *podrun.InvalidError
		switch {
		case err == nil:
		case ctx.Err() == nil && errors.As(err, &inv):
			lines, invalid = append(lines, p.Tell(kube.ContainerPaths(inv.Err.Error(), p.Inits))), true
		case ctx.Err() == nil && errors.As(err, new(*podrun.PullError)):
			lines, pulls = append(lines, p.Tell(kube.ContainerPaths(err.Error(), p.Inits))), append(pulls, err)
		default:
			return createError(err, where(path, p), func(msg string) string { return kube.ContainerPaths(msg, p.Inits) })
		}
		return nil
	}
	for i := range plans {
		p := &plans[i]
		if err := p.Err(); err != nil {
			lines, invalid = append(lines, err.Error()), true
			if err := tell(p, r.CheckImages(ctx, p.Images)); err != nil {
				release()
				return nil, err
			}
			continue
		}
		rp, err := r.Resolve(ctx, p.Manifest, pod.Isolation(iso))
		if err == nil {
			resolved = append(resolved, rp)
		} else if err := tell(p, err); err != nil {
			release()
			return nil, err
		}
	}
	if len(lines) == 0 {
		return resolved, nil
	}
	release()
	msg := path + ": " + strings.Join(lines, "\n")
	if invalid {
		return nil, &exitError{code: exitUsage, err: errors.New(msg)}
	}
	return nil, failed(&toldError{msg: msg, err: errors.Join(pulls...)})
}

// hintNearImages has a failed pull of r's tell the --image mapping of
// the same repository (images.Near), which the user may have meant for
// the image: a mapping matches an image's name exactly.
func hintNearImages(r *podrun.Runner, images kube.Images) {
	pull := r.Pull
	if pull == nil {
		return
	}
	r.Pull = func(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error) {
		img, err := pull(ctx, s, a)
		if hint := images.Near(a.Image); err != nil && hint != "" {
			err = fmt.Errorf("%w; %s", err, hint)
		}
		return img, err
	}
}

// planPods maps the Kubernetes Pods in data, the file at path, to the
// pods that pod run runs in stateDir (kube.Plan), their images mapped
// with images, each with its refusals; a file that is not one of Pods
// exits 2.
func planPods(path string, data []byte, images kube.Images, stateDir string) ([]kube.Planned, error) {
	plans, err := kube.Plan(data, kube.Options{Images: images, RegistryImages: true, AllowPrivileged: true}, stateDir)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", path, err)}
	}
	return plans, nil
}

// graphManifest returns the manifest of the pod that pod run would run
// from the file at path: a unitrun manifest, or a file of one Kubernetes
// Pod mapped with images to run in stateDir. A bad file exits 2.
func graphManifest(path string, images kube.Images, stateDir string) (*pod.Manifest, error) {
	data, err := pod.ReadManifest(path)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if !kube.IsPodYAML(data) {
		m, err := pod.Parse(data)
		if err != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", path, err)}
		}
		return m, nil
	}
	plans, err := planPods(path, data, images, stateDir)
	if err != nil {
		return nil, err
	}
	var refused []error
	for i := range plans {
		refused = append(refused, plans[i].Err())
	}
	if err := errors.Join(refused...); err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", path, err)}
	}
	if len(plans) > 1 {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s holds %d Pods: pod graph draws one pod's graph; give a file of one Pod", path, len(plans))}
	}
	m, err := pod.Parse(plans[0].Manifest)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %s", path, plans[0].Tell(kube.ContainerPaths(err.Error(), plans[0].Inits)))}
	}
	return m, nil
}

// startPods starts the pods ms of a file of several Pods, in its order,
// and prints them (printCreated).
func startPods(cmd *cobra.Command, r *podrun.Runner, ms []*pod.Manifest, policy record.ExitPolicy, asJSON bool) error {
	for _, m := range ms {
		if err := r.Start(cmd.Context(), m.Name, policy); err != nil {
			return failed(err)
		}
	}
	return printCreated(cmd, r, ms, asJSON)
}

// printCreated prints the name of each pod of ms, or with asJSON its status.
func printCreated(cmd *cobra.Command, r *podrun.Runner, ms []*pod.Manifest, asJSON bool) error {
	for _, m := range ms {
		if asJSON {
			if err := printPod(cmd, r, m.Name); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintln(cmd.OutOrStdout(), m.Name)
	}
	return nil
}
