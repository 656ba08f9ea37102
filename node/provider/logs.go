package provider

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"slices"
	"time"

	unitrunpod "github.com/unitrun/unitrun/pod"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
)

// GetContainerLogs returns the output of a container: its app's log, as
// pod.Logs copies it (Timestamps, Previous, Tail and SinceSeconds or
// SinceTime as kubectl logs gives them), with LimitBytes its first bytes,
// and Follow going on with what the app writes until ctx ends or the
// container's run has ended (pod.FollowEnds), as the CLI's pod logs.
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	p.mu.Lock()
	e := p.pods[key(namespace, podName)]
	var pod *corev1.Pod
	var st *corev1.PodStatus
	if e != nil {
		pod, st = e.pod, e.sent
		switch {
		case e.refused != nil:
			st = refusedStatus(pod, e.refused, e.at)
		case e.waiting != nil:
			st = waitingStatus(pod, e.waiting, e.at)
		}
	}
	p.mu.Unlock()
	if e == nil {
		return nil, errdefs.NotFoundf("pod %s has no logs on this node", key(namespace, podName))
	}
	known := false
	for _, c := range append(slices.Clip(pod.Spec.InitContainers), pod.Spec.Containers...) {
		known = known || c.Name == containerName
	}
	if !known {
		return nil, errdefs.NotFoundf("pod %s has no container %q", key(namespace, podName), containerName)
	}
	// As the kubelet answers (400, which the API server passes on to
	// kubectl with its message; a 404's it drops).
	if reason := waitingToStart(st, containerName); reason != "" && !opts.Previous {
		return nil, errdefs.InvalidInputf("container %q in pod %q is waiting to start: %s", containerName, podName, reason)
	}
	o := unitrunpod.LogOptions{Follow: opts.Follow, Tail: opts.Tail, Since: opts.SinceTime, Timestamps: opts.Timestamps, Previous: opts.Previous}
	if opts.SinceSeconds > 0 {
		o.Since = time.Now().Add(-time.Duration(opts.SinceSeconds) * time.Second)
	}
	logs, err := unitrunpod.OpenLogs(p.eng.r.StateDir, e.name, []string{containerName}, o)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errdefs.NotFoundf("pod %s has no logs on this node", key(namespace, podName))
	}
	if err != nil {
		return nil, errdefs.InvalidInput(err.Error())
	}
	pr, pw := io.Pipe()
	go func() {
		defer logs.Close()
		var w io.Writer = pw
		if opts.LimitBytes > 0 {
			w = &limitWriter{w: pw, n: opts.LimitBytes}
		}
		err := logs.Copy(ctx, w, unitrunpod.FollowEnds(p.eng.r.StateDir, e.name, containerName))
		if errors.Is(err, errLimit) || ctx.Err() != nil {
			err = nil
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// waitingToStart is the reason container name waits in status st if it
// has not run yet, else "" (also without a status).
func waitingToStart(st *corev1.PodStatus, name string) string {
	if st == nil {
		return ""
	}
	for _, cs := range append(slices.Clip(st.InitContainerStatuses), st.ContainerStatuses...) {
		if cs.Name == name && cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil {
			return cs.State.Waiting.Reason
		}
	}
	return ""
}

var errLimit = errors.New("limit reached")

// limitWriter passes on at most n bytes, then fails with errLimit.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if l.n <= 0 {
		return 0, errLimit
	}
	if len(b) > l.n {
		n, err := l.w.Write(b[:l.n])
		l.n -= n
		if err == nil {
			err = errLimit
		}
		return n, err
	}
	n, err := l.w.Write(b)
	l.n -= n
	return n, err
}
