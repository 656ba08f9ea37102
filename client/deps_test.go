package client_test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbidden are the import path prefixes that a client of the daemon must
// not link: the daemon itself and the libraries only the daemon needs.
var forbidden = []string{
	"github.com/unitrun/unitrun/hostapi",
	"github.com/prometheus/",
	"github.com/pelletier/go-toml",
	"github.com/godbus/",
	"go.yaml.in/yaml",
	"gopkg.in/yaml",
	"sigs.k8s.io/yaml",
}

// deps returns the packages that pkg imports, directly or not, and whether
// each is in the standard library, as `go list -deps` finds them.
func deps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	all := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, std, _ := strings.Cut(line, " ")
		all[path] = std == "true"
	}
	return all
}

// TestDeps fails when the client or the node agent built on it links the
// daemon or one of the daemon's dependencies (the model is tailscale's
// tstest/deptest), or when package api imports anything but the standard
// library.
func TestDeps(t *testing.T) {
	for _, pkg := range []string{
		"github.com/unitrun/unitrun/client",
		"github.com/unitrun/unitrun/deploy/kubernetes/node-agent",
	} {
		all := deps(t, pkg)
		for _, dep := range slices.Sorted(maps.Keys(all)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s imports %s (forbidden: %s*); a client of the daemon links only package api and the standard library", pkg, dep, f)
				}
			}
		}
	}
	const api = "github.com/unitrun/unitrun/api"
	for dep, std := range deps(t, api) {
		if !std && dep != api {
			t.Errorf("%s imports %s, which is not in the standard library", api, dep)
		}
	}
}
