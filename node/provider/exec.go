package provider

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/unitrun/unitrun/internal/pty"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	utilexec "k8s.io/utils/exec"
)

// RunInContainer runs cmd in container containerName of Pod
// namespace/podName, for kubectl exec, as "unitrun pod exec" runs it: in
// the app's cgroup (its limits hold cmd, its end or the Pod's deletion
// ends it), namespaces, user, environment and root. With a TTY, cmd gets
// a pseudo-terminal of its own, its controlling terminal, whose size
// follows the client's. A command that exits with a status other than 0,
// or is killed by signal N (128+N), returns it as the kubelet does, so
// that kubectl says "command terminated with exit code N" and exits N.
func (p *Provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach api.AttachIO) error {
	name, err := p.running(namespace, podName)
	if err != nil {
		return err
	}
	c, err := p.eng.execCommand(ctx, name, containerName, cmd)
	if err != nil {
		return err
	}
	in := attach.Stdin()
	if attach.TTY() {
		t, err := pty.Open()
		if err != nil {
			return err
		}
		go func() {
			for size := range attach.Resize() {
				t.Resize(size.Width, size.Height)
			}
		}()
		return exitStatus(t.Run(c, in, attach.Stdout(), in != nil))
	}
	if in != nil {
		// A pipe of its own: exec.Cmd would wait for the client to close
		// its stdin after the command has exited.
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		go func() {
			io.Copy(w, in)
			w.Close()
		}()
		c.Stdin = r
	}
	if out := attach.Stdout(); out != nil {
		c.Stdout = out
	}
	if out := attach.Stderr(); out != nil {
		c.Stderr = out
	}
	return exitStatus(c.Run())
}

// exitStatus is the error that RunInContainer returns for err, the end of
// "unitrun pod exec": a utilexec.ExitError for a command that ran and
// exited with a status other than 0 or was killed by a signal.
func exitStatus(err error) error {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	code := ee.ExitCode()
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return utilexec.CodeExitError{Err: err, Code: code}
}

// AttachToContainer streams to kubectl attach what container
// containerName of Pod namespace/podName writes from now on (its stdout
// and stderr, one stream as its log holds them), until its run ends or
// the client goes. A container has no stdin to attach to: a unitrun app
// reads none, so an attach with stdin (-i) is refused.
func (p *Provider) AttachToContainer(ctx context.Context, namespace, podName, containerName string, attach api.AttachIO) error {
	name, err := p.running(namespace, podName)
	if err != nil {
		return err
	}
	if err := p.eng.checkRunning(name, containerName); err != nil {
		return err
	}
	if attach.Stdin() != nil {
		return errdefs.InvalidInputf("container %q of pod %s has no stdin to attach to (unitrun-node gives containers none): attach without -i/--stdin", containerName, key(namespace, podName))
	}
	out := io.Writer(attach.Stdout())
	if out == nil {
		out = attach.Stderr()
	}
	if out == nil {
		return nil
	}
	return p.eng.followLog(ctx, name, containerName, out)
}

// running returns the unitrun pod of Pod namespace/podName, which must
// run on this node.
func (p *Provider) running(namespace, podName string) (string, error) {
	e := p.lookup(key(namespace, podName))
	if e == nil {
		return "", errdefs.NotFoundf("pod %s is not on this node", key(namespace, podName))
	}
	p.mu.Lock()
	refused := e.refused
	p.mu.Unlock()
	if refused != nil {
		return "", errdefs.InvalidInputf("pod %s does not run on this node: %v", key(namespace, podName), refused)
	}
	return e.name, nil
}
