package main

import (
	debugbuildinfo "debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/internal/buildinfo"
)

// TestVersion builds unitrun-node and checks that --version prints the
// version, the commit and the Go version recorded in the binary, and
// exits 0 without looking for a cluster or for unitrun.
func TestVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "unitrun-node")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bi, err := debugbuildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{"PATH=/nonexistent"}
	out, err := cmd.Output()
	if want := "unitrun-node " + buildinfo.From(bi).String() + "\n"; err != nil || string(out) != want {
		t.Errorf("--version: %q, %v; want %q and exit 0", out, err, want)
	}
}

// TestClientRateLimits checks that the client built from a kubeconfig has
// a kubelet's rate limit, not client-go's 5 requests a second, which
// queued 20 Pods' status updates over 7 s.
func TestClientRateLimits(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: c, context: {cluster: c, user: u}}
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := clientset(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if qps := client.CoreV1().RESTClient().GetRateLimiter().QPS(); qps != apiQPS {
		t.Errorf("client's rate limit: %v requests a second, want %v", qps, apiQPS)
	}
}
