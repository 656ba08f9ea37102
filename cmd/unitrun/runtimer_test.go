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
		{[]string{"--on-calendar", ""}, "--on-calendar", "not a calendar event"},
		{[]string{"--on-active", ""}, "--on-active", `time span ""`},
		{[]string{"--on-boot", ""}, "--on-boot", `time span ""`},
		{[]string{"--on-startup", ""}, "--on-startup", `time span ""`},
		{[]string{"--on-unit-active", ""}, "--on-unit-active", `time span ""`},
		{[]string{"--on-unit-inactive", ""}, "--on-unit-inactive", `time span ""`},
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

// "unitrun wait" on the service of a one-shot timer reads the end of a
// short run, which nothing but the wait keeps once the timer is gone:
// exit 3 for a run that exited 3, and the recorded exit 0 (not a run
// without an outcome) for one that succeeded. A failed run stays loaded as
// failed, as systemd-run's timer service does (CollectMode=inactive).
func TestWaitOneShotTimerShortRun(t *testing.T) {
	for _, tc := range []struct {
		status string
		code   int
		json   string
	}{
		{"3", 3, `"result":"exit-code","exit_code":3`},
		{"0", 0, `"result":"success","exit_code":0`},
	} {
		name := "unitrun-timer-short" + tc.status
		stopUnit(t, name+".timer")
		stopUnit(t, name+".service")
		// The run, short, waits for its start until gate exists: it is
		// ordered after a unit that starts then.
		gate, gateUnit := filepath.Join(t.TempDir(), "gate"), name+"-gate.service"
		stopUnit(t, gateUnit)
		if _, errs, code := systemdRun(t, "-q", "--no-block", "-u", gateUnit, "-p", "Type=oneshot", "-p", "RemainAfterExit=yes",
			"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.1; done`, "sh", gate); code != 0 {
			t.Fatalf("run the gate: exit %d, %s", code, errs)
		}
		if _, errs, code := unitrun(t, "run", "-q", "-u", name, "-p", "After="+gateUnit, "--on-active", "1h", "--", "sh", "-c", "exit "+tc.status); code != 0 {
			t.Fatalf("run --on-active: exit %d, %s", code, errs)
		}
		wait := exec.Command(systemdtest.Binary(t), "wait", "--json", name)
		var out strings.Builder
		wait.Stdout = &out
		stderr, err := wait.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := wait.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(stderr).ReadString('\n'); !strings.Contains(line, "waiting for its next run") {
			wait.Process.Kill()
			t.Fatalf("wait told %q, %v; want that it waits for the next run", line, err)
		}
		// The timer's last run, started early: the timer goes, as a
		// one-shot timer goes once elapsed, then the run ends.
		for _, args := range [][]string{{"start", "--no-block", name + ".service"}, {"stop", name + ".timer"}} {
			if b, err := exec.Command("systemctl", append([]string{"--user"}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("systemctl %q: %v\n%s", args, err, b)
			}
		}
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		wait.Wait()
		if code := wait.ProcessState.ExitCode(); code != tc.code || !strings.Contains(out.String(), tc.json) {
			t.Errorf("wait on a one-shot timer's service that exits %s: exit %d, stdout %q; want %d and %s", tc.status, code, out.String(), tc.code, tc.json)
		}
	}
	if got := showUnit(t, "unitrun-timer-short3.service", "ActiveState", "CollectMode"); got != "ActiveState=failed\nCollectMode=inactive\n" {
		t.Errorf("the timer's service after a failed run: %q; want it failed and kept as systemd-run keeps it", got)
	}
	ref := "unitrun-timer-shortref"
	stopUnit(t, ref+".timer")
	if _, errs, code := systemdRun(t, "-u", ref, "--on-active", "1h", "/bin/false"); code != 0 {
		t.Fatalf("systemd-run: exit %d, %s", code, errs)
	}
	if got := showUnit(t, ref+".service", "CollectMode"); got != "CollectMode=inactive\n" {
		t.Errorf("systemd-run's timer service: %q", got)
	}
}

// A timer's name taken, by its timer or by its service, is told with the
// unit that holds it, and the systemctl commands that free that one.
func TestRunTimerNameTaken(t *testing.T) {
	timer, service := "unitrun-timer-taken", "unitrun-timer-takensvc"
	stopUnit(t, timer+".timer")
	stopUnit(t, service+".service")
	if _, errs, code := unitrun(t, "run", "-q", "-u", timer, "--on-active", "1h", "--", "/bin/true"); code != 0 {
		t.Fatalf("run --on-active: exit %d, %s", code, errs)
	}
	if _, errs, code := unitrun(t, "run", "-q", "-r", "--no-wait", "-u", service, "--", "/bin/true"); code != 0 {
		t.Fatalf("run -r --no-wait: exit %d, %s", code, errs)
	}
	for _, taken := range []string{timer + ".timer", service + ".service"} {
		name := strings.TrimSuffix(strings.TrimSuffix(taken, ".timer"), ".service")
		_, errs, code := unitrun(t, "run", "-q", "-u", name, "--on-active", "1h", "--", "/bin/true")
		if code != 125 || !strings.HasPrefix(errs, "unitrun: "+taken+": unit already exists") ||
			!strings.Contains(errs, "stop "+taken+"; ") || !strings.Contains(errs, "reset-failed "+taken+`"`) {
			t.Errorf("run --on-active -u %s with %s taken: exit %d, stderr %q; want 125 naming %s", name, taken, code, errs, taken)
		}
	}
}
