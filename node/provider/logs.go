package provider

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
)

// GetContainerLogs returns the output of a container: its app's log file,
// which holds the lines of every run of the app, without timestamps. Tail
// keeps the last lines, LimitBytes the first bytes, and Follow goes on
// with what the app writes until ctx ends or the pod has ended. The log
// has no timestamps, so Timestamps and Previous are refused, and a since
// (SinceSeconds, SinceTime) is honoured only when it is before the pod was
// created: then every line is newer.
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	p.mu.Lock()
	e := p.pods[key(namespace, podName)]
	var pod *corev1.Pod
	if e != nil {
		pod = e.pod
	}
	p.mu.Unlock()
	if e == nil || e.refused != nil {
		return nil, errdefs.NotFoundf("pod %s has no logs on this node", key(namespace, podName))
	}
	known := false
	for _, c := range append(slices.Clip(pod.Spec.InitContainers), pod.Spec.Containers...) {
		known = known || c.Name == containerName
	}
	if !known {
		return nil, errdefs.NotFoundf("pod %s has no container %q", key(namespace, podName), containerName)
	}
	if opts.Timestamps {
		return nil, errdefs.InvalidInput("timestamps: unitrun's app logs carry none")
	}
	if opts.Previous {
		return nil, errdefs.InvalidInput("previous: unitrun's app log holds every run of the app in one file")
	}
	since := opts.SinceTime
	if opts.SinceSeconds > 0 {
		since = time.Now().Add(-time.Duration(opts.SinceSeconds) * time.Second)
	}
	if !since.IsZero() && !since.Before(pod.CreationTimestamp.Time) {
		return nil, errdefs.InvalidInput("since: unitrun's app logs carry no timestamps, so only a time before the pod was created can be honoured")
	}
	f, err := os.Open(p.eng.logFile(e.name, containerName))
	if err != nil {
		return nil, err
	}
	if opts.Tail > 0 {
		if err := seekTail(f, opts.Tail); err != nil {
			f.Close()
			return nil, err
		}
	} else if opts.Tail == 0 && !opts.Follow && opts.LimitBytes == 0 {
		return f, nil
	}
	pr, pw := io.Pipe()
	go func() {
		var w io.Writer = pw
		if opts.LimitBytes > 0 {
			w = &limitWriter{w: pw, n: opts.LimitBytes}
		}
		pw.CloseWithError(p.copyLog(ctx, f, w, opts.Follow, e))
		f.Close()
	}()
	return pr, nil
}

// copyLog copies f to w; with follow it goes on until ctx ends or the pod
// has ended, and then copies what is left.
func (p *Provider) copyLog(ctx context.Context, f *os.File, w io.Writer, follow bool, e *entry) error {
	for {
		ended := !follow
		if follow {
			s, err := p.eng.status(e.name)
			ended = err != nil || s.ended()
		}
		if _, err := io.Copy(w, f); err != nil {
			if errors.Is(err, errLimit) {
				return nil
			}
			return err
		}
		if ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
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

// seekTail places f at the start of its last n lines.
func seekTail(f *os.File, n int) error {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	const chunk = 32 << 10
	buf := make([]byte, chunk)
	pos, lines := size, 0
	// A final newline ends the last line; it does not start one.
	for pos > 0 {
		m := int64(chunk)
		if pos < m {
			m = pos
		}
		pos -= m
		if _, err := f.ReadAt(buf[:m], pos); err != nil {
			return err
		}
		for i := m - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == size-1 {
				continue
			}
			if lines++; lines == n {
				_, err := f.Seek(pos+i+1, io.SeekStart)
				return err
			}
		}
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}
