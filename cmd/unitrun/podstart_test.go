package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An isolated pod whose own systemd cannot boot has ended Failed 255
// before its start is over: pod start, pod run --detach and pod run exit
// with that code, never 0, and the first two say that the pod ended
// Failed. Here the app's rootfs has a file where the container mounts
// /proc, so the container's boot fails before its systemd runs.
func TestPodStartEndedFailed(t *testing.T) {
	for i, args := range [][]string{{"start"}, {"run", "--detach"}, {"run", "-q"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			rootfs := t.TempDir()
			if err := os.WriteFile(filepath.Join(rootfs, "proc"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			name := "noboot" + string(rune('a'+i))
			path := manifestFile(t, "name: "+name+"\nisolation: namespaces\napps:\n  - name: a\n    rootfs: "+rootfs+"\n    exec: [\"/bin/true\"]\n")
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
			if code != 255 {
				t.Errorf("pod %s: exit %d, stderr %q; want exit 255", strings.Join(args, " "), code, errs)
			}
			if args[len(args)-1] != "-q" && !strings.Contains(errs, "ended Failed") {
				t.Errorf("pod %s: stderr %q does not say that the pod ended Failed", strings.Join(args, " "), errs)
			}
			status, _, _ := podCLI(t, dir, "status", "--json", name)
			if !strings.Contains(status, `"phase": "Failed"`) || !strings.Contains(status, `"exit_code": 255`) {
				t.Errorf("pod status after the failed boot: %s; want phase Failed, exit code 255", status)
			}
		})
	}
}
