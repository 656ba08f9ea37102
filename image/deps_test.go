package image_test

import (
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/depstest"
)

// TestDeps fails when package image links anything but the standard
// library, golang.org/x/sys and unitrun's own internal packages: unitrun
// links it, and every unitrun process (each job's, each hook's) would run
// the inits of what it brings (go-containerregistry's regexps and
// decompressors took 0.6 ms of each start). The registry's side is
// package image/registry.
func TestDeps(t *testing.T) {
	for _, dep := range depstest.Deps(t, ".") {
		p := dep.Path
		if !dep.Standard && p != "github.com/unitrun/unitrun/image" &&
			!strings.HasPrefix(p, "golang.org/x/sys/") && !strings.HasPrefix(p, "github.com/unitrun/unitrun/internal/") {
			t.Errorf("package image links %s: keep it to the standard library and golang.org/x/sys (the registry's side is image/registry)", p)
		}
	}
}
