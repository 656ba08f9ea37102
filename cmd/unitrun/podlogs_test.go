package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// pod logs of an app that ran twice: --previous prints the first run's
// lines exactly, --timestamps begins each line with its time (RFC 3339
// with nanoseconds), --since that time of the second run's line prints
// that line only, --since as a duration and --tail cut as asked; bad
// --since and --tail values are refused naming the flag, with exit 2.
func TestPodLogsFlags(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "twice")
	script := fmt.Sprintf(`echo x >> %[1]s/n; n=$(wc -l < %[1]s/n); echo "run $n  spaced "; test $n -ge 2`, t.TempDir())
	manifest := fmt.Sprintf("name: twice\nrestartBackoff: {initial: 100ms}\napps: [{name: a, restartPolicy: OnFailure, exec: [/bin/sh, -c, %q]}]\n", script)
	if _, errs, code := podCLI(t, dir, "run", manifestFile(t, manifest)); code != 0 {
		t.Fatalf("pod run: exit %d: %s", code, errs)
	}
	if out, errs, code := podCLI(t, dir, "logs", "--previous", "twice", "a"); code != 0 || out != "run 1  spaced \n" {
		t.Errorf("pod logs --previous: exit %d, %q, %q; want the first run's line", code, out, errs)
	}
	out, errs, code := podCLI(t, dir, "logs", "--timestamps", "twice", "a")
	lines := strings.SplitAfter(out, "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("pod logs --timestamps: exit %d, %q, %q; want two lines", code, out, errs)
	}
	stamp, rest, _ := strings.Cut(lines[1], " ")
	if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil || rest != "run 2  spaced \n" {
		t.Errorf("pod logs --timestamps: second line %q, want its time in RFC 3339, a space, the line", lines[1])
	}
	if out, errs, code := podCLI(t, dir, "logs", "--since", stamp, "twice"); code != 0 || out != "a | run 2  spaced \n" {
		t.Errorf("pod logs --since %s: exit %d, %q, %q; want the second run's line", stamp, code, out, errs)
	}
	if out, errs, code := podCLI(t, dir, "logs", "--since", "1h", "--tail", "1", "twice", "a"); code != 0 || out != "run 2  spaced \n" {
		t.Errorf("pod logs --since 1h --tail 1: exit %d, %q, %q; want the last line", code, out, errs)
	}
	for flag, value := range map[string]string{"--since": "yesterday", "--tail": "-2"} {
		if out, errs, code := podCLI(t, dir, "logs", flag, value, "twice"); code != 2 || out != "" || !strings.Contains(errs, flag+" ") {
			t.Errorf("pod logs %s %s: exit %d, %q, %q; want exit 2 and an error naming %s", flag, value, code, out, errs, flag)
		}
	}
}
