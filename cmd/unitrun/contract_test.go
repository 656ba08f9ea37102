package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestBadInputExits2 gives every command bad input through the built
// binary: an unknown subcommand or flag, a bad flag value, a wrong number
// of arguments, a bad unit name and a bad --manager each exit 2, print
// nothing on stdout, name what was wrong on stderr, show no Go internals,
// and start nothing (the embedded manager of the bad --manager cases is
// never booted).
func TestBadInputExits2(t *testing.T) {
	embedded := filepath.Join(t.TempDir(), "embedded")
	installDir, missing := t.TempDir(), filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		args []string
		env  string // NAME=VALUE, or ""
		want string // on stderr
	}{
		{[]string{"bogus"}, "", `unknown command "bogus" for "unitrun"`},
		{[]string{"op", "bogus"}, "", `unknown command "bogus" for "unitrun op"`},
		{[]string{"manager", "bogus"}, "", `unknown command "bogus" for "unitrun manager"`},
		{[]string{"pod", "bogus"}, "", `unknown command "bogus" for "unitrun pod"`},
		{[]string{"completion", "bogus"}, "", `unknown command "bogus" for "unitrun completion"`},
		{[]string{"op", "lst"}, "", `did you mean "list"`},

		{[]string{"--bogus", "run", "--", "true"}, "", "--bogus"},
		{[]string{"run", "--bogus", "--", "true"}, "", "--bogus"},
		{[]string{"start", "--bogus", "x.service"}, "", "--bogus"},
		{[]string{"op", "list", "--bogus"}, "", "--bogus"},
		{[]string{"op", "call", "--bogus", "sh"}, "", "--bogus"},
		{[]string{"op", "status", "-z", "id"}, "", "'z'"},
		{[]string{"manager", "status", "--bogus"}, "", "--bogus"},
		{[]string{"daemon", "--bogus"}, "", "--bogus"},
		{[]string{"inject", "--bogus"}, "", "--bogus"},
		{[]string{"install", "--bogus"}, "", "--bogus"},
		{[]string{"uninstall", "--bogus"}, "", "--bogus"},
		{[]string{"pod", "list", "--bogus"}, "", "--bogus"},
		{[]string{"run", "-u"}, "", "--unit"},

		{[]string{"run", "--timeout", "soon", "--", "true"}, "", `--timeout "soon": must be a duration`},
		{[]string{"run", "--retry", "x", "--", "true"}, "", `--retry "x": must be a whole number`},
		{[]string{"run", "--json=maybe", "--", "true"}, "", `--json "maybe": must be true or false`},
		{[]string{"op", "call", "--no-wait=2", "sh"}, "", `--no-wait "2": must be true or false`},
		{[]string{"run", "--timeout", "-1s", "--", "true"}, "", "--timeout"},
		{[]string{"run", "--retry", "1", "--retry-delay", "-1s", "--", "true"}, "", "--retry-delay -1s: must not be negative"},
		{[]string{"inject", "--variant", ":ID=x"}, "", `--variant ":ID=x": the PATH before the first ':' is empty`},

		{[]string{"start"}, "", "accepts 1 arg"},
		{[]string{"op", "status"}, "", "accepts 1 arg"},
		{[]string{"op", "call"}, "", "requires at least 1 arg"},
		{[]string{"manager", "status", "extra"}, "", `unknown command "extra"`},
		{[]string{"daemon", "extra"}, "", `unknown command "extra"`},
		{[]string{"run"}, "", "requires at least 1 arg"},

		{[]string{"run", "-u", "bad/name", "--", "true"}, "", `--unit: unit name "bad/name.service": character '/' not allowed`},
		{[]string{"run", "-u", "x.scope", "--", "true"}, "", `--unit "x.scope": a command runs as a service`},
		{[]string{"run", "-u", "x.target", "--", "true"}, "", `--unit "x.target"`},
		{[]string{"run", "-u", "x@.service", "--", "true"}, "", `--unit: unit name "x@.service": a template, not a unit: name an instance, such as "x@NAME.service"`},
		{[]string{"run", "-u", "x@", "--", "true"}, "", `--unit: unit name "x@.service": a template`},
		{[]string{"run", "--prefix", "a/b-", "--", "true"}, "", `--prefix: unit name prefix "a/b-"`},
		{[]string{"start", "a/b.service"}, "", `unit name "a/b.service"`},
		{[]string{"start", "foo@.service"}, "", `unit name "foo@.service": a template, not a unit`},
		{[]string{"start", "bad name"}, "", `unit name "bad name.service": character ' ' not allowed`},
		{[]string{"wait", "foo@.service"}, "", `unit name "foo@.service": a template, not a unit`},
		{[]string{"wait", "x.target"}, "", `unit "x.target": only a service has a run to wait for`},

		{[]string{"install", "--bin-dir", missing, "--unit-dir", installDir, "--dbus-dir", installDir}, "", "--bin-dir " + missing + ": no such file or directory"},
		{[]string{"install", "--bin-dir", installDir, "--unit-dir", installDir, "--dbus-dir", missing}, "", "--dbus-dir " + missing + ": no such file or directory"},

		{[]string{"--manager", "bogus", "run", "--", "true"}, "", `--manager: manager "bogus": must be auto, system, user, private:PATH or embedded`},
		{[]string{"--manager", "bogus", "start", "x.service"}, "", "--manager"},
		{[]string{"--manager", "bogus", "manager", "status"}, "", "--manager"},
		{[]string{"--manager", "private:relative", "inject", "--gc"}, "", "--manager"},
		{[]string{"--manager", "bogus", "install"}, "", "--manager"},
		{[]string{"--manager", "bogus", "uninstall"}, "", "--manager"},
		{[]string{"--manager", "bogus", "pod", "list"}, "", "--manager"},
		{[]string{"run", "--", "true"}, "UNITRUN_MANAGER=bogus", `$UNITRUN_MANAGER: manager "bogus"`},
	} {
		env := []string{"UNITRUN_EMBEDDED_DIR=" + embedded}
		if tc.env != "" {
			env = append(env, tc.env)
		}
		out, errs, code := unitrunEnv(t, env, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("unitrun %q: exit %d, stdout %q, stderr %q; want exit 2 and an error with %q", tc.args, code, out, errs, tc.want)
		}
		for _, internal := range []string{"strconv.", "time: ", "statat", "*errors.", "%!"} {
			if strings.Contains(errs, internal) {
				t.Errorf("unitrun %q: stderr %q shows %q", tc.args, errs, internal)
			}
		}
	}
	if _, err := os.Stat(embedded); !os.IsNotExist(err) {
		t.Errorf("bad input booted the embedded manager in %s (%v)", embedded, err)
	}
	if names, _ := os.ReadDir(installDir); len(names) != 0 {
		t.Errorf("install with a missing dir wrote %v", names)
	}
}

// TestRelativeEmbeddedDir: a relative --embedded-dir, or
// $UNITRUN_EMBEDDED_DIR, is refused with exit 2, naming the flag or the
// variable and the rule, before anything is created where the command
// runs: it was taken, and the embedded manager's boot failed (exit 125)
// with mount's text after it had made files under it.
func TestRelativeEmbeddedDir(t *testing.T) {
	systemdtest.Binary(t) // built here, in the module, before the Chdir
	cwd := t.TempDir()
	t.Chdir(cwd)
	flag := "unitrun: --embedded-dir \"m\": must be an absolute path\n"
	env := "unitrun: $UNITRUN_EMBEDDED_DIR \"m\": must be an absolute path\n"
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"--manager", "embedded", "--embedded-dir", "m", "run", "-q", "--", "echo", "hi"}, flag},
		{"UNITRUN_EMBEDDED_DIR=m", []string{"--manager", "embedded", "run", "-q", "--", "echo", "hi"}, env},
		{"UNITRUN_EMBEDDED_DIR=m", []string{"--manager", "embedded", "--embedded-dir", "./m", "start", "x.service"}, strings.Replace(flag, `"m"`, `"./m"`, 1)},
		{"", []string{"--embedded-dir", "m", "manager", "start"}, flag},
		{"", []string{"--embedded-dir", "m", "manager", "status"}, flag},
		{"", []string{"--embedded-dir", "m", "manager", "env"}, flag},
		{"UNITRUN_EMBEDDED_DIR=m", []string{"manager", "stop"}, env},
		{"", []string{"--embedded-dir", "m", "pod", "list", "--state-dir", filepath.Join(t.TempDir(), "state")}, flag},
	} {
		var env []string
		if tc.env != "" {
			env = append(env, tc.env)
		}
		out, errs, code := unitrunEnv(t, env, tc.args...)
		if code != exitUsage || out != "" || errs != tc.want {
			t.Errorf("%s unitrun %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.env, tc.args, code, out, errs, tc.want)
		}
	}
	if names, _ := os.ReadDir(cwd); len(names) != 0 {
		t.Errorf("a relative embedded dir left %v where unitrun ran", names)
	}
}

// TestUnitFlagAddsServiceSuffix: -u NAME without a suffix runs
// NAME.service, and a dot inside the name that is no unit type is kept,
// as systemd-run does.
func TestUnitFlagAddsServiceSuffix(t *testing.T) {
	for name, want := range map[string]string{
		"unitrun-plain":        "unitrun-plain.service",
		"unitrun-v1.2":         "unitrun-v1.2.service",
		"unitrun-full.service": "unitrun-full.service",
		"unitrun-inst@a.b":     "unitrun-inst@a.b.service",
	} {
		out, errs, code := unitrun(t, "run", "--json", "-u", name, "--", "true")
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Unit != want {
			t.Errorf("run -u %s: unit %q, exit %d (%v, stderr %q); want %s", name, r.Unit, code, err, errs, want)
		}
	}
}

// TestOwnFailureExits125: a failure of unitrun itself, not of the
// user's input, exits 125.
func TestOwnFailureExits125(t *testing.T) {
	_, errs, code := unitrun(t, "op", "list", "--socket", filepath.Join(t.TempDir(), "none.sock"))
	if code != exitFailed || errs == "" {
		t.Errorf("op list with no daemon: exit %d, stderr %q; want 125", code, errs)
	}
}

// unitrunEnv is unitrun with more environment variables.
func unitrunEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(systemdtest.Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestErrorsShowNoInternals gives run, start, op, daemon, inject and
// --manager input that fails and checks that the error names what the
// user gave and the reason, with no system call, Go or D-Bus names.
func TestErrorsShowNoInternals(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "daemon.toml")
	if err := os.WriteFile(config, []byte("[[op]]\nname = \"x\"\nexec = [\"/bin/true\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A FIFO with no writer: opening it to read blocked inject for good.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := []string{"daemon", "--config", config, "--ops-dir", filepath.Join(dir, "ops.d"), "--state-dir", filepath.Join(dir, "state"),
		"--socket", filepath.Join(dir, "api.sock"), "--seqpacket", filepath.Join(dir, "argv.sock")}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--", notExec}, exitCannotExec, notExec + ": cannot execute: permission denied"},
		{[]string{"start", "unitrun-no-such-unit.service"}, exitFailed, "start unitrun-no-such-unit.service: Unit unitrun-no-such-unit.service not found."},
		{[]string{"--manager", "private:" + filepath.Join(dir, "none.sock"), "run", "--", "true"}, exitFailed, filepath.Join(dir, "none.sock") + "): no such file or directory"},
		{[]string{"op", "list", "--socket", filepath.Join(dir, "none.sock")}, exitFailed, "unitrun daemon at " + filepath.Join(dir, "none.sock") + ": no such file or directory"},
		{append(daemon, "--state-dir", config+"/state"), exitFailed, "--state-dir " + config + "/state: " + config + ": not a directory"},
		{append(daemon, "--socket", config+"/api.sock"), exitUsage, "--socket " + config + "/api.sock: " + config + " is not a directory"},
		{append(daemon, "--socket", dir+"/none/api.sock"), exitUsage, "--socket " + dir + "/none/api.sock: directory " + dir + "/none does not exist"},
		{append(daemon, "--socket", config), exitUsage, "--socket " + config + ": " + config + " exists and is not a socket: the path must be free or hold a socket"},
		{append(daemon, "--seqpacket", notExec), exitUsage, "--seqpacket " + notExec + ": " + notExec + " exists and is not a socket"},
		{append(daemon, "--dbus", "bogus"), exitUsage, `--dbus "bogus": must be system, session or a D-Bus address`},
		{[]string{"run", "--self", "--inject-dir", "rel", "--", "version"}, exitUsage, "--inject-dir rel: must be an absolute path"},
		{[]string{"run", "--self", "--inject-dir", config, "--", "version"}, exitUsage, "--inject-dir " + config + ": "},
		{[]string{"inject", "--dir", filepath.Join(dir, "bin"), filepath.Join(dir, "none")}, exitUsage, "source " + filepath.Join(dir, "none") + ": no such file or directory"},
		{[]string{"inject", "--dir", filepath.Join(dir, "bin"), fifo}, exitUsage, "source " + fifo + ": not a regular file (it is a FIFO)"},
		{[]string{"inject", "--os-release", filepath.Join(dir, "none"), "--variant", "/bin/true:ID=x"}, exitUsage, "os-release " + filepath.Join(dir, "none") + ": no such file or directory"},
		{[]string{"inject", "--gc", "--dir", filepath.Join(dir, "none")}, exitUsage, "--dir " + filepath.Join(dir, "none") + ": no such file or directory"},
		{[]string{"inject", "--dir", "/proc/sys", "/bin/true"}, exitFailed, "unitrun: inject: dir /proc/sys: a file cannot be created in it: no such file or directory\n"},
	} {
		_, errs, code := unitrun(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("unitrun %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
		for _, internal := range []string{`exec: "`, "dial unix", "connect:", "mkdir ", "open ", "lstat ", `Get "`, "org.freedesktop", "statat", "strconv"} {
			if strings.Contains(errs, internal) {
				t.Errorf("unitrun %q: stderr %q shows %q", tc.args, errs, internal)
			}
		}
	}
	// Every daemon above was refused before it created its state dir.
	if _, err := os.Stat(filepath.Join(dir, "state")); !os.IsNotExist(err) {
		t.Errorf("a refused daemon created its --state-dir (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bin")); !os.IsNotExist(err) {
		t.Errorf("inject of a missing source created its --dir (%v)", err)
	}
	sock := filepath.Join(dir, "none.sock")
	out, _, code := unitrun(t, "--manager", "private:"+sock, "manager", "status")
	if want := "no\tprivate:" + sock + "\tunix:path=" + sock + ": no such file or directory\n"; code != exitFailed || out != want {
		t.Errorf("manager status of a missing socket: exit %d, stdout %q; want %q", code, out, want)
	}
}
