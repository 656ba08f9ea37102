package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

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
// and refused before any is created, and a pod that cannot be created
// removes those created before it. several false refuses a file of more
// than one Pod.
func createPods(ctx context.Context, r *podrun.Runner, createWith func(context.Context, []byte, pod.Isolation) (*pod.Manifest, error), path string, data []byte, iso string, images kube.Images, several bool) ([]*pod.Manifest, error) {
	plans, err := kube.Plan(data, kube.Options{Images: images, AllowPrivileged: true}, r.StateDir)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", path, err)}
	}
	if len(plans) > 1 && !several {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s holds %d Pods: pod run follows one pod's output; run them with --detach", path, len(plans))}
	}
	var ms []*pod.Manifest
	undo := func() {
		for _, m := range ms {
			r.Remove(context.WithoutCancel(ctx), m.Name, true)
		}
	}
	for i, p := range plans {
		m, err := createWith(ctx, p.Manifest, pod.Isolation(iso))
		if invalid := (*podrun.InvalidError)(nil); errors.As(err, &invalid) {
			undo()
			doc := ""
			if len(plans) > 1 {
				doc = fmt.Sprintf("document %d: ", i+1)
			}
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: %sPod %s: %s", path, doc, p.Name, kube.ContainerPaths(invalid.Err.Error(), plans[i].Inits))}
		}
		if err != nil {
			undo()
			return nil, createFailed(err)
		}
		ms = append(ms, m)
		for _, d := range p.EmptyDirs {
			if err := d.MakeEmptyDir(); err != nil {
				undo()
				return nil, failed(fmt.Errorf("pod %s: make its emptyDir: %w", m.Name, err))
			}
		}
	}
	return ms, nil
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
