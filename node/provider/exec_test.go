package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	utilexec "k8s.io/utils/exec"
)

// testAttach is the streams of a kubectl exec or attach.
type testAttach struct {
	in       io.Reader
	out, err io.WriteCloser
	tty      bool
	resize   chan api.TermSize
}

func (a *testAttach) Stdin() io.Reader            { return a.in }
func (a *testAttach) Stdout() io.WriteCloser      { return a.out }
func (a *testAttach) Stderr() io.WriteCloser      { return a.err }
func (a *testAttach) TTY() bool                   { return a.tty }
func (a *testAttach) Resize() <-chan api.TermSize { return a.resize }

// lockedBuffer is a buffer that one goroutine writes while another reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) Close() error { return nil }

// cancelWhen is a lockedBuffer that calls cancel once it holds want.
type cancelWhen struct {
	lockedBuffer
	want   string
	cancel func()
}

func (c *cancelWhen) Write(p []byte) (int, error) {
	n, err := c.lockedBuffer.Write(p)
	if strings.Contains(c.String(), c.want) {
		c.cancel()
	}
	return n, err
}
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// RunInContainer runs a command in a running container, as kubectl exec
// asks, through unitrun pod exec on the real systemd: its stdout and
// stderr apart, stdin, its exit status as the kubelet returns it, a
// terminal whose size follows the client's; a container that does not
// exist is not found, one that has ended is not running. (It answered
// "not supported".)
func TestRunInContainer(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("execd", corev1.RestartPolicyNever, nil, "echo started; exec sleep 600", "exit 0")
	create(t, client, p)
	waitPod(t, client, p, "Running", phase(corev1.PodRunning))
	defer func() {
		deletePod(t, client, p)
		waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	}()
	ctx := context.Background()
	run := func(a *testAttach, cmd ...string) error {
		return n.p.RunInContainer(ctx, p.Namespace, p.Name, "app0", cmd, a)
	}
	// exec runs cmd with stdin in and returns its stdout and stderr.
	execIn := func(in io.Reader, cmd ...string) (string, string, error) {
		out, errs := &lockedBuffer{}, &lockedBuffer{}
		err := run(&testAttach{in: in, out: out, err: errs}, cmd...)
		return out.String(), errs.String(), err
	}

	out, errs, err := execIn(nil, "sh", "-c", "echo out; echo err >&2; exit 42")
	var ee utilexec.ExitError
	if !errors.As(err, &ee) || ee.ExitStatus() != 42 || out != "out\n" || errs != "err\n" {
		t.Errorf("exec sh -c 'exit 42': %v, stdout %q, stderr %q; want exit code 42, out and err", err, out, errs)
	}
	if out, _, err := execIn(strings.NewReader("abcd1234"), "cat"); err != nil || out != "abcd1234" {
		t.Errorf("exec -i cat: %v, %q", err, out)
	}
	if _, _, err := execIn(nil, "sh", "-c", "kill -9 $$"); !errors.As(err, &ee) || ee.ExitStatus() != 137 {
		t.Errorf("exec of a command killed by SIGKILL: %v, want exit code 137", err)
	}

	// A terminal: the command's controlling terminal, in its foreground
	// process group, of the size the client gave, with its input.
	in, typed := io.Pipe()
	shown := &lockedBuffer{}
	a := &testAttach{in: in, out: shown, tty: true, resize: make(chan api.TermSize)}
	done := make(chan error, 1)
	go func() {
		done <- run(a, "sh", "-c", `read line; echo "[$line] $(stty size) $(ps -o tpgid= -p $$ | tr -d ' ') $$"`)
	}()
	// The second size is taken once the first is set.
	a.resize <- api.TermSize{Width: 100, Height: 30}
	a.resize <- api.TermSize{Width: 100, Height: 30}
	typed.Write([]byte("typed\r"))
	if err := <-done; err != nil {
		t.Errorf("exec -ti: %v", err)
	}
	fields := strings.Fields(shown.String()[max(strings.Index(shown.String(), "[typed]"), 0):])
	if len(fields) != 5 || fields[1] != "30" || fields[2] != "100" || fields[3] != fields[4] {
		t.Errorf("exec -ti showed %q; want [typed], the size 30 100, and the shell leading the terminal's foreground group", shown.String())
	}
	typed.Close()

	if err := n.p.RunInContainer(ctx, p.Namespace, p.Name, "nosuch", []string{"true"}, &testAttach{}); !errdefs.IsNotFound(err) {
		t.Errorf("exec in a container the Pod does not have: %v, want not found", err)
	}
	waitPod(t, client, p, "app1 to have ended", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 2 && cs[1].State.Terminated != nil
	})
	if err := n.p.RunInContainer(ctx, p.Namespace, p.Name, "app1", []string{"true"}, &testAttach{}); !errdefs.IsInvalidInput(err) || !strings.Contains(err.Error(), `container "app1" is not running`) {
		t.Errorf("exec in a container that has ended: %v, want it not running", err)
	}
}

// AttachToContainer streams what a running container writes from then
// on, as kubectl attach does; stdin is refused with the reason. (It
// answered "not supported".)
func TestAttachToContainer(t *testing.T) {
	client := fake.NewClientset()
	n := startNode(t, testConfig(t), client)
	p := newPod("attached", corev1.RestartPolicyNever, nil, "while :; do echo tick; sleep 0.1; done")
	create(t, client, p)
	waitPod(t, client, p, "Running", phase(corev1.PodRunning))
	defer func() {
		deletePod(t, client, p)
		waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	}()
	ctx, cancel := context.WithCancel(context.Background())
	out := &cancelWhen{want: "tick\ntick\n", cancel: cancel}
	err := n.p.AttachToContainer(ctx, p.Namespace, p.Name, "app0", &testAttach{out: out})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(out.String(), "tick\ntick\n") {
		t.Errorf("attach: %v, %q; want the ticks until the client went", err, out.String())
	}
	err = n.p.AttachToContainer(context.Background(), p.Namespace, p.Name, "app0", &testAttach{in: strings.NewReader("x"), out: &lockedBuffer{}})
	if !errdefs.IsInvalidInput(err) || !strings.Contains(err.Error(), "no stdin") {
		t.Errorf("attach -i: %v, want it refused: no stdin", err)
	}
}
