package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// showUnit returns what "systemctl --user show" reads of props for name.
func showUnit(t *testing.T, name string, props ...string) string {
	t.Helper()
	out, err := exec.Command("systemctl", "--user", "show", "-p", strings.Join(props, ","), name).CombinedOutput()
	if err != nil {
		t.Fatalf("systemctl show %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// stopUnit stops name at the end of the test, wherever it failed, and
// lets a failed one go.
func stopUnit(t *testing.T, name string) {
	t.Cleanup(func() {
		exec.Command("systemctl", "--user", "stop", name).Run()
		exec.Command("systemctl", "--user", "reset-failed", name).Run()
	})
}

// systemd-run's flags that set a property (--nice, --slice, --description,
// --service-type, --uid, --gid, --send-sighup, -r, and --property as -p's
// long form) make the unit that systemd-run makes with them on the same
// manager, flags winning over -p as in systemd-run; with -r (and
// --no-wait, which -r needs) the unit stays active after its command
// exits in both. --uid with a name
// works on the user manager that runs as root, as -p User= does.
func TestRunPropertyFlagsLikeSystemdRun(t *testing.T) {
	flags := []string{"--property", "Nice=1", "--nice", "5", "--slice", "flagtest", "--description", "flag test",
		"--service-type", "oneshot", "--uid", "nobody", "--gid", "65534", "--send-sighup", "-r"}
	props := []string{"Nice", "Slice", "Description", "Type", "User", "Group", "SendSIGHUP", "RemainAfterExit",
		"ActiveState", "SubState", "Result", "ExecMainStatus"}
	ref, mine := "unitrun-flags-ref.service", "unitrun-flags-run.service"
	stopUnit(t, "flagtest.slice") // after the units
	stopUnit(t, ref)
	stopUnit(t, mine)
	argv := []string{"/bin/sh", "-c", `test "$(id -un) $(nice)" = "nobody 5"`}
	if _, errs, code := systemdRun(t, append(append([]string{"-q", "-u", ref}, flags...), argv...)...); code != 0 {
		t.Fatalf("systemd-run: exit %d, %s", code, errs)
	}
	if _, errs, code := unitrun(t, append(append([]string{"run", "-q", "--no-wait", "-u", mine}, flags...), append([]string{"--"}, argv...)...)...); code != 0 {
		t.Fatalf("run %q: exit %d, %s", flags, code, errs)
	}
	want, got := showUnit(t, ref, props...), showUnit(t, mine, props...)
	if got != want {
		t.Errorf("run %q made\n%s\nsystemd-run made\n%s", flags, got, want)
	}
	if !strings.Contains(got, "SubState=exited") || !strings.Contains(got, "Slice=flagtest.slice") {
		t.Errorf("run %q: the unit is not kept after its run, or not in its slice:\n%s", flags, got)
	}
}

// A value that systemd-run refuses for a property flag is refused before
// anything is created, exit 2, with an error naming the flag and the rule.
func TestRunPropertyFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		flags      []string
		name, rule string
		refRefuses bool // systemd-run refuses it too
	}{
		{[]string{"--nice", "20"}, "--nice", "not a nice level in -20..19", true},
		{[]string{"--nice", "x"}, "--nice", "not a nice level", true},
		{[]string{"--service-type", "notify-reload"}, "--service-type", "not one of simple, exec", true},
		{[]string{"--slice", "a@b"}, "--slice", "not a slice name", true},
		// systemd-run passes it on, and the manager takes it.
		{[]string{"--description", "two\nlines"}, "--description", "must not contain control characters", false},
		// systemd-run -r does not wait for the run.
		{[]string{"-r"}, "--remain-after-exit", "give --no-wait too", false},
	} {
		_, errs, code := unitrun(t, append(append([]string{"run", "-q"}, tc.flags...), "--", "/bin/true")...)
		if code != 2 || !strings.Contains(errs, tc.name) || !strings.Contains(errs, tc.rule) {
			t.Errorf("run %q: exit %d, stderr %q; want 2 and an error naming %s and %q", tc.flags, code, errs, tc.name, tc.rule)
		}
		if !tc.refRefuses {
			continue
		}
		if _, _, refCode := systemdRun(t, append(append([]string{"-q", "--wait"}, tc.flags...), "/bin/true")...); refCode == 0 {
			t.Errorf("systemd-run %q succeeded", tc.flags)
		}
	}
}

// run --no-wait --json prints its one JSON object for a command that
// ended before its start was done (a oneshot's start job waits for its
// exit), and with -r a failed unit stays loaded as failed, as systemd-run
// -r leaves it: whether its run ended before the start was done or after
// unitrun returned.
func TestRunNoWaitFailedLikeSystemdRun(t *testing.T) {
	out, errs, code := unitrun(t, "run", "--no-wait", "--json", "--service-type", "oneshot", "--", "sh", "-c", "exit 3")
	if code != 3 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"result":"exit-code","exit_code":3`) {
		t.Errorf("run --no-wait --json of a oneshot that exits 3: exit %d, stdout %q, stderr %q; want 3 and one JSON object telling it", code, out, errs)
	}
	gate := filepath.Join(t.TempDir(), "gate")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"unitrun-noWait-ref", nil},
		{"unitrun-noWait-oneshot", []string{"--service-type", "oneshot", "--", "sh", "-c", "exit 3"}},
		{"unitrun-noWait-after", []string{"--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.1; done; exit 3`, "sh", gate}},
	} {
		stopUnit(t, tc.name+".service")
		if tc.args == nil {
			systemdRun(t, "-q", "-r", "-u", tc.name, "--service-type", "oneshot", "sh", "-c", "exit 3")
		} else {
			unitrun(t, append([]string{"run", "-q", "-r", "--no-wait", "-u", tc.name}, tc.args...)...)
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"unitrun-noWait-ref", "unitrun-noWait-oneshot", "unitrun-noWait-after"} {
		got := ""
		for range 200 {
			got = showUnit(t, name+".service", "LoadState", "ActiveState")
			if got == "LoadState=not-found\nActiveState=inactive\n" || strings.Contains(got, "ActiveState=failed") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got != "LoadState=loaded\nActiveState=failed\n" {
			t.Errorf("-r unit %s after its command exited 3: %q; want it loaded and failed", name, got)
		}
	}
}

// run --slice refuses the name of a unit that is not a slice, as
// systemd-run fails on it, and with an empty name runs the unit in the
// manager's default slice, as systemd-run does.
func TestRunSliceLikeSystemdRun(t *testing.T) {
	for _, name := range []string{"foo.service", "init.scope"} {
		_, errs, code := unitrun(t, "run", "--slice", name, "--", "/bin/true")
		if code != 2 || !strings.Contains(errs, "--slice") || !strings.Contains(errs, "not a slice") {
			t.Errorf("run --slice %s: exit %d, stderr %q; want 2, naming --slice and that it is not a slice", name, code, errs)
		}
		if _, _, code := systemdRun(t, "-q", "--wait", "--slice", name, "/bin/true"); code == 0 {
			t.Errorf("systemd-run --slice %s succeeded", name)
		}
	}
	ref, mine := "unitrun-slice-ref", "unitrun-slice-empty"
	stopUnit(t, ref+".service")
	stopUnit(t, mine+".service")
	if _, errs, code := systemdRun(t, "-q", "-r", "-u", ref, "--slice", "", "/bin/true"); code != 0 {
		t.Fatalf("systemd-run --slice '': exit %d, %s", code, errs)
	}
	if _, errs, code := unitrun(t, "run", "-q", "-r", "--no-wait", "-u", mine, "--slice", "", "--", "/bin/true"); code != 0 {
		t.Fatalf("run --slice '': exit %d, %s", code, errs)
	}
	if got, want := showUnit(t, mine+".service", "Slice"), showUnit(t, ref+".service", "Slice"); got != want {
		t.Errorf("run --slice '' ran in %q; systemd-run in %q", got, want)
	}
}

// A switch given =false and a flag given its default count as given for
// nothing: --send-sighup=false and -r=false win over -p, as the flags do
// when true, and --scope takes --json=false and --retry 0. A bad --uid or
// --gid (which systemd-run's manager refuses) and a timer's command word
// that is not UTF-8 are refused before anything starts, exit 2 naming
// them.
func TestRunFlagsGivenFalseAndBadValues(t *testing.T) {
	sighup, remain := "unitrun-flags-sighup", "unitrun-flags-remain"
	stopUnit(t, sighup+".service")
	stopUnit(t, remain+".service")
	if _, errs, code := unitrun(t, "run", "-q", "-r", "--no-wait", "-u", sighup, "-p", "SendSIGHUP=yes", "--send-sighup=false", "--", "/bin/true"); code != 0 {
		t.Fatalf("run --send-sighup=false: exit %d, %s", code, errs)
	}
	if got := showUnit(t, sighup+".service", "SendSIGHUP"); got != "SendSIGHUP=no\n" {
		t.Errorf("-p SendSIGHUP=yes --send-sighup=false made %q; want the flag to win", got)
	}
	if _, errs, code := unitrun(t, "run", "-q", "--no-wait", "-u", remain, "-p", "RemainAfterExit=yes", "-r=false", "--", "/bin/true"); code != 0 {
		t.Fatalf("run -r=false: exit %d, %s", code, errs)
	}
	waitGone(t, remain+".service") // not remaining after its exit
	for _, flags := range [][]string{{"--json=false"}, {"--retry", "0"}, {"-r=false"}} {
		if _, errs, code := unitrun(t, append(append([]string{"run", "-q", "--scope"}, flags...), "--", "/bin/true")...); code != 0 {
			t.Errorf("run --scope %q: exit %d, %s; want it to run", flags, code, errs)
		}
	}
	for _, flags := range [][]string{{"--uid", "-1"}, {"--gid", "x:y"}, {"--uid", "65535"}} {
		_, errs, code := unitrun(t, append(append([]string{"run"}, flags...), "--", "/bin/true")...)
		if code != 2 || !strings.HasPrefix(errs, "unitrun: "+flags[0]+": ") {
			t.Errorf("run %q: exit %d, stderr %q; want 2 and an error naming %s", flags, code, errs, flags[0])
		}
		if _, _, code := systemdRun(t, append(append([]string{"-q", "--wait"}, flags...), "/bin/true")...); code == 0 {
			t.Errorf("systemd-run %q succeeded", flags)
		}
	}
	_, errs, code := unitrun(t, "run", "-u", "unitrun-flags-utf8", "--on-active", "1h", "--", "echo", "\xff")
	if code != 2 || !strings.Contains(errs, `"\xff": not valid UTF-8`) {
		t.Errorf("run --on-active with a word not UTF-8: exit %d, stderr %q; want 2 naming the word", code, errs)
	}
}
