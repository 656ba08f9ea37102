package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// A containerLogs request the provider refuses is answered as the kubelet
// answers it: its status, and the provider's message alone, which kubectl
// shows; logs it gives stream as they are.
func TestLogErrorsAsTheKubelet(t *testing.T) {
	const msg = `container "c" in pod "p" is waiting to start: ContainerCreating`
	h := api.PodHandler(api.PodHandlerConfig{
		GetContainerLogs: func(_ context.Context, _, pod, _ string, _ api.ContainerLogOpts) (io.ReadCloser, error) {
			if pod == "waiting" {
				return nil, errdefs.InvalidInput(msg)
			}
			return io.NopCloser(strings.NewReader("out\n")), nil
		},
	}, false)
	srv := httptest.NewServer(kubeletLogErrors(h))
	defer srv.Close()
	for _, c := range []struct {
		pod, body string
		code      int
	}{{"waiting", msg, http.StatusBadRequest}, {"running", "out\n", http.StatusOK}} {
		resp, err := http.Get(srv.URL + "/containerLogs/ns/" + c.pod + "/c")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || string(body) != c.body {
			t.Errorf("logs of %s: %d %q, want %d %q", c.pod, resp.StatusCode, body, c.code, c.body)
		}
	}
}
