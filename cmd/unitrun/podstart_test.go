package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pod that ended Failed before its start was over makes pod start, pod
// run --detach and pod run exit with the pod's exit code, never 0; the
// first two say that the pod ended Failed. Two ways to get there: an
// isolated pod whose own systemd cannot boot (its app's rootfs has a file
// where the container mounts /proc) ends Failed 255; a pod whose init app
// fails ends Failed with its code before the other apps start.
func TestPodStartEndedFailed(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.WriteFile(filepath.Join(rootfs, "proc"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		how, apps string
		code      int
	}{
		{"noboot", "isolation: namespaces\napps:\n  - name: a\n    rootfs: " + rootfs + "\n    exec: [\"/bin/true\"]\n", 255},
		{"initfails", "apps:\n  - name: setup\n    init: true\n    exec: [\"/bin/sh\", \"-c\", \"exit 3\"]\n  - name: main\n    exec: [\"/bin/sleep\", \"600\"]\n", 3},
	} {
		for i, args := range [][]string{{"start"}, {"run", "--detach"}, {"run", "-q"}} {
			cmd := strings.Join(args, " ")
			t.Run(c.how+" "+cmd, func(t *testing.T) {
				dir := t.TempDir()
				name := fmt.Sprintf("%s%d", c.how, i)
				path := manifestFile(t, "name: "+name+"\n"+c.apps)
				rmPod(t, dir, name)
				var errs string
				var code int
				if args[0] == "start" {
					if _, errs, code := podCLI(t, dir, "create", path); code != 0 {
						t.Fatalf("pod create: exit %d, %q", code, errs)
					}
					_, errs, code = podCLI(t, dir, "start", name)
				} else {
					_, errs, code = podCLI(t, dir, append(args, path)...)
				}
				if code != c.code {
					t.Errorf("pod %s: exit %d, stderr %q; want exit %d", cmd, code, errs, c.code)
				}
				if args[len(args)-1] != "-q" && !strings.Contains(errs, "ended Failed") {
					t.Errorf("pod %s: stderr %q does not say that the pod ended Failed", cmd, errs)
				}
				s := podStatus(t, dir, name)
				if s.Phase != "Failed" || s.ExitCode == nil || *s.ExitCode != c.code {
					t.Errorf("pod status: %s, exit %v; want Failed %d", s.Phase, s.ExitCode, c.code)
				}
			})
		}
	}
}
