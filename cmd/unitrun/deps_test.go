package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/depstest"
)

// TestNoCostlyInits fails when unitrun links a package whose init does
// work at every process's start, a run's, a start's and each pod hook's
// included, for a command that few processes run: the daemon's metrics
// libraries (VictoriaMetrics/metrics read the cgroup's pressure files and
// the Go runtime's metric descriptions at every start, 0.3 to 0.45 ms of
// the CPU of a run; client_golang more) and runtime/metrics.
func TestNoCostlyInits(t *testing.T) {
	for _, dep := range depstest.Deps(t, ".") {
		if slices.Contains([]string{"github.com/VictoriaMetrics/metrics", "github.com/prometheus/client_golang/prometheus", "runtime/metrics"}, dep.Path) {
			t.Errorf("unitrun links %s, whose package init every unitrun process runs", dep.Path)
		}
	}
}

// TestNoRegistryClient fails when unitrun links go-containerregistry,
// whose dependencies' inits (go-digest's regexps, zstd's tables, logrus
// through docker's config) cost every unitrun process 0.6 ms: unitrun
// runs unitrun-pull for its registry work (package internal/pullexec).
func TestNoRegistryClient(t *testing.T) {
	for _, dep := range depstest.Deps(t, ".") {
		if strings.HasPrefix(dep.Path, "github.com/google/go-containerregistry/") || dep.Path == "github.com/unitrun/unitrun/image/registry" {
			t.Errorf("unitrun links %s: its registry work is unitrun-pull's", dep.Path)
		}
	}
}
