package provider

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPortForward runs a Pod that serves HTTP on the real systemd and
// GETs a page through PortForward, as kubectl port-forward does; a Pod
// not on the node is not found. (PortForward answered "not supported".)
func TestPortForward(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	client := fake.NewClientset()
	cfg := testConfig(t)
	n := startNode(t, cfg, client)
	dir := t.TempDir() // the container's image is the host
	p := newPod("served", corev1.RestartPolicyNever, nil,
		"cd "+dir+" && echo hello through the port > index.html && exec /usr/bin/python3 -m http.server "+strconv.Itoa(port)+" --bind 127.0.0.1")
	create(t, client, p)
	waitPod(t, client, p, "Running", phase(corev1.PodRunning))
	defer func() {
		deletePod(t, client, p)
		waitGone(t, n, podName(p.Namespace, p.Name, string(p.UID)))
	}()

	get := func() (string, error) {
		ours, theirs := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- n.p.PortForward(context.Background(), p.Namespace, p.Name, int32(port), theirs) }()
		defer ours.Close()
		req, _ := http.NewRequest("GET", "http://pod/index.html", nil)
		req.Close = true
		if err := req.Write(ours); err != nil {
			return "", err
		}
		resp, err := http.ReadResponse(bufio.NewReader(ours), req)
		if err != nil {
			return "", err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		return resp.Status + ": " + string(body), <-done
	}
	// The server may still be starting: the Pod is Running once its
	// process is.
	var got string
	for range 100 {
		if got, err = get(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if want := "200 OK: hello through the port\n"; err != nil || got != want {
		t.Errorf("GET through PortForward: %q, %v; want %q", got, err, want)
	}
	ours, theirs := net.Pipe()
	defer ours.Close()
	if err := n.p.PortForward(context.Background(), p.Namespace, "elsewhere", int32(port), theirs); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "not on this node") {
		t.Errorf("PortForward to a Pod not on the node: %v, want not found", err)
	}
}
