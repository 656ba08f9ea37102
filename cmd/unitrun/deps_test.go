package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoCostlyInits fails when unitrun links a package whose init does
// work at every process's start, a run's, a start's and each pod hook's
// included, for a command that few processes run: the daemon's metrics
// libraries (VictoriaMetrics/metrics read the cgroup's pressure files and
// the Go runtime's metric descriptions at every start, 0.3 to 0.45 ms of
// the CPU of a run; client_golang more) and runtime/metrics.
func TestNoCostlyInits(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, p := range []string{"github.com/VictoriaMetrics/metrics", "github.com/prometheus/client_golang/prometheus", "runtime/metrics"} {
		if slices.Contains(deps, p) {
			t.Errorf("unitrun links %s, whose package init every unitrun process runs", p)
		}
	}
}
