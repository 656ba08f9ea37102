package podrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/record"
)

// check runs p, a probe of a, once, bounded by timeout, and returns its
// result and, for a failure or a success to note, why. An exec probe runs
// p.Exec as a's User= and Group=, when set, in a process group of its own
// that is killed at the timeout; if the command exits with a status other
// than 0, why is what it printed (its first 10 KiB, empty if it printed
// nothing), as the kubelet's exec prober says; an http probe GETs
// http://127.0.0.1:PORT/PATH and wants a status in range ([httpCheck]);
// a tcp probe opens a connection to 127.0.0.1:PORT; a grpc probe asks
// 127.0.0.1:PORT's gRPC health service ([grpcCheck]).
func check(ctx context.Context, a *pod.App, p *pod.Probe, timeout time.Duration) (string, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	var note, failure string
	switch {
	case p.Exec != nil:
		var out []byte
		out, err = execCheck(ctx, a, p.Exec)
		failure = string(out)
	case p.HTTP != nil:
		note, err = httpCheck(ctx, p.HTTP)
	case p.TCP != nil:
		var c net.Conn
		if c, err = new(net.Dialer).DialContext(ctx, "tcp", localAddr(p.TCP.Port)); err == nil {
			c.Close()
		}
	case p.GRPC != nil:
		note, err = grpcCheck(ctx, p.GRPC, timeout)
	}
	switch {
	case err == nil:
		return record.ProbeSuccess, note
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return record.ProbeTimeout, fmt.Sprintf("no answer within %v", timeout)
	case errors.As(err, new(*exec.ExitError)):
		return record.ProbeFailure, failure
	}
	return record.ProbeFailure, err.Error()
}

func localAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// maxRedirects is how many redirects an http probe follows, as the
// kubelet's prober (and Go's client) does.
const maxRedirects = 10

// probeClient is the client of http probes: it follows a redirect to the
// same host, as the kubelet's prober does, and stops at one to another
// host, whose answer is then the probe's, with a note ([httpCheck]).
var probeClient = &http.Client{
	Transport: http.DefaultTransport,
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Hostname() != via[0].URL.Hostname() {
			return http.ErrUseLastResponse
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	},
}

// maxRead is how much of an answer's body an http probe's note holds, and
// of an exec probe's output its message, as the kubelet's prober reads at
// most 10 KiB.
const maxRead = 10 << 10

// httpCheck GETs p's path on 127.0.0.1 and wants the last answer's status
// in p's range. Redirects to the same host are followed; a redirect to
// another host is not, and its own status is checked (the default range,
// 200-399, takes it, as the kubelet counts it a success with a warning):
// the note says so, with the answer's body (its first 10 KiB), in the
// kubelet's words, which its ProbeWarning event gives.
func httpCheck(ctx context.Context, p *pod.HTTPProbe) (note string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+localAddr(p.Port)+p.Path, nil)
	if err != nil {
		return "", err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return "", err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRead))
	resp.Body.Close()
	url := resp.Request.URL.Redacted()
	if resp.StatusCode < p.Status.Min || resp.StatusCode > p.Status.Max {
		if resp.Request != req {
			return "", fmt.Errorf("status %d from %s, want %d-%d", resp.StatusCode, url, p.Status.Min, p.Status.Max)
		}
		return "", fmt.Errorf("status %d, want %d-%d", resp.StatusCode, p.Status.Min, p.Status.Max)
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
		return fmt.Sprintf("status %d from %s: its redirect to %s, another host, not followed: Probe terminated redirects, Response body: %s", resp.StatusCode, url, loc, body), nil
	}
	return "", nil
}

// execCheck runs argv, an exec probe of a, until it exits or ctx is done,
// when its whole process group is killed, and returns what it wrote to its
// stdout and stderr (the first maxRead bytes). For an app with a rootfs the
// probe runs chrooted into it, as the app does, so argv names the
// rootfs's files; a command name is looked up in the app's PATH there,
// as the app's own is ([appexec.LookPath]); it has the app's environment.
func execCheck(ctx context.Context, a *pod.App, argv []string) ([]byte, error) {
	spec := a.ExecSpec()
	c, err := appexec.Resolve(spec)
	if err != nil {
		return nil, err
	}
	root := a.Rootfs
	if root == "" {
		root = "/"
	}
	path, err := appexec.LookPath(root, argv[0], a.Env)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = c.Env()
	cmd.Dir = a.WorkingDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Chroot: a.Rootfs}
	if cmd.Dir == "" {
		// Where the app's command starts ([appexec.Context.Exec]),
		// not in the manager's directory the probe's service has.
		cmd.Dir = "/"
	}
	cred, err := appexec.Credential(spec)
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr.Credential = cred
	out := &headBuffer{max: maxRead}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The command exited 0; a process it left behind holds its
		// output open.
		err = nil
	}
	return out.buf, err
}

// headBuffer keeps the first max bytes written to it and drops the rest;
// a write never fails, so that the command writing goes on to its end.
type headBuffer struct {
	buf []byte
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.buf = append(h.buf, p[:min(len(p), h.max-len(h.buf))]...)
	return len(p), nil
}
