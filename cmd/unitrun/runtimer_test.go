package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// run --on-active, --on-boot, --on-startup, --on-unit-active,
// --on-unit-inactive and --on-calendar make the timer that systemd-run
// makes with them on the same manager, and its service, and print what
// systemd-run prints (and the service's name on stdout, as --no-wait).
func TestRunTimerLikeSystemdRun(t *testing.T) {
	flags := []string{"--on-active", "1h", "--on-boot", "2h", "--on-startup", "3h", "--on-unit-active", "4h",
		"--on-unit-inactive", "5h", "--on-calendar", "*-*-* 04:00:00", "--on-calendar", "Mon *-*-* 05:00"}
	props := []string{"TimersMonotonic", "TimersCalendar", "RemainAfterElapse", "Triggers", "ActiveState"}
	ref, mine := "unitrun-timer-ref", "unitrun-timer-run"
	for _, name := range []string{ref, mine} {
		stopUnit(t, name+".timer")
		stopUnit(t, name+".service")
	}
	_, refErrs, code := systemdRun(t, append(append([]string{"-u", ref}, flags...), "/bin/true")...)
	if code != 0 {
		t.Fatalf("systemd-run: exit %d, %s", code, refErrs)
	}
	out, errs, code := unitrun(t, append(append([]string{"run", "-u", mine}, flags...), "--", "/bin/true")...)
	if code != 0 || out != mine+".service\n" || strings.ReplaceAll(errs, mine, ref) != refErrs {
		t.Errorf("run %q: exit %d, stdout %q, stderr %q; systemd-run printed %q", flags, code, out, errs, refErrs)
	}
	// The next elapse is the time of each call.
	elapse := regexp.MustCompile(`next_elapse=[^}]*`)
	want := elapse.ReplaceAllString(showUnit(t, ref+".timer", props...), "")
	got := elapse.ReplaceAllString(strings.ReplaceAll(showUnit(t, mine+".timer", props...), mine, ref), "")
	if got != want || !strings.Contains(got, "OnUnitInactiveUSec=5h") || !strings.Contains(got, "Mon *-*-* 05:00:00") {
		t.Errorf("run %q made the timer\n%s\nsystemd-run made\n%s", flags, got, want)
	}

	for _, tc := range []struct {
		flags      []string
		name, rule string
	}{
		{[]string{"--on-active", "soon"}, "--on-active", `time span "soon"`},
		{[]string{"--on-calendar", "nonsense"}, "--on-calendar", "the manager refuses it"},
		{[]string{"--on-active", "1h", "--scope"}, "--scope and a timer", "give one of them"},
		{[]string{"--on-active", "1h", "--pty"}, "--pty and a timer", "give one of them"},
	} {
		_, errs, code := unitrun(t, append(append([]string{"run", "-u", "unitrun-timer-bad"}, tc.flags...), "--", "/bin/true")...)
		if code != 2 || !strings.Contains(errs, tc.name) || !strings.Contains(errs, tc.rule) {
			t.Errorf("run %q: exit %d, stderr %q; want 2 and an error naming %s and %q", tc.flags, code, errs, tc.name, tc.rule)
		}
		if _, _, refCode := systemdRun(t, append(append([]string{"-u", "unitrun-timer-badref"}, tc.flags...), "/bin/true")...); refCode == 0 {
			t.Errorf("systemd-run %q succeeded", tc.flags)
		}
	}
	waitGone(t, "unitrun-timer-bad.timer")
}

// "unitrun wait" on the service of a timer that has not elapsed yet waits
// for its next run and exits with that run's status.
func TestWaitTimerNextRun(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	name := "unitrun-timer-next"
	stopUnit(t, name+".timer")
	stopUnit(t, name+".service")
	script := `echo started; while [ ! -e "$1" ]; do sleep 0.1; done; exit 4`
	if _, errs, code := unitrun(t, "run", "-q", "-u", name, "--on-active", "1h", "--", "sh", "-c", script, "sh", gate); code != 0 {
		t.Fatalf("run --on-active: exit %d, %s", code, errs)
	}
	wait := exec.Command(systemdtest.Binary(t), "wait", name)
	stdout, err := wait.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := wait.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if line != "unitrun: "+name+".service has no run in progress; waiting for its next run, which "+name+".timer starts\n" {
		wait.Process.Kill()
		t.Fatalf("wait told %q, %v; want that it waits for the next run", line, err)
	}
	// The timer's run, started early.
	if out, err := exec.Command("systemctl", "--user", "start", "--no-block", name+".service").CombinedOutput(); err != nil {
		t.Fatalf("systemctl start: %v\n%s", err, out)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "started\n" {
		wait.Process.Kill()
		t.Fatalf("wait showed %q, %v; want the run's first line", line, err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wait.Wait()
	if code := wait.ProcessState.ExitCode(); code != 4 {
		t.Errorf("wait on a timer's service: exit %d; want the run's 4", code)
	}
}
