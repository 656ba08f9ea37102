package main

import (
	debugbuildinfo "debug/buildinfo"
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
