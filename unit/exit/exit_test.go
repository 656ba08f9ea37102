package exit

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The same death, read from each source, is the same Exit, and writes the
// same JSON: the D-Bus properties ExecMainCode/ExecMainStatus/Result and
// the variables $EXIT_CODE/$EXIT_STATUS/$SERVICE_RESULT of ExecStopPost=.
func TestExitConversions(t *testing.T) {
	for _, c := range []struct {
		name string
		// D-Bus: ExecMainCode, ExecMainStatus, Result.
		mainCode, mainStatus int32
		// ExecStopPost=: $EXIT_CODE, $EXIT_STATUS; both take result.
		envCode, envStatus string
		result             string
		want               Exit
		exitCode           int // JSON exit_code, -1 for null
		signal             string
		text               string
	}{
		{"exit 0", 1, 0, "exited", "0", "success", Exit{Ran: true, Result: "success"}, 0, "", "exit status 0"},
		{"exit 3", 1, 3, "exited", "3", "exit-code", Exit{Ran: true, ExitCode: 3, Result: "exit-code"}, 3, "", "exit status 3"},
		{"SuccessExitStatus=3", 1, 3, "exited", "3", "success", Exit{Ran: true, ExitCode: 3, Result: "success"}, 3, "", "exit status 3"},
		{"exit 255", 1, 255, "exited", "255", "exit-code", Exit{Ran: true, ExitCode: 255, Result: "exit-code"}, 255, "", "exit status 255"},
		{"kill -9 $$", 2, 9, "killed", "KILL", "signal", Exit{Ran: true, ExitCode: 137, Signal: syscall.SIGKILL, Result: "signal"}, 137, "KILL", "signal: SIGKILL"},
		{"SIGTERM, clean for systemd", 2, 15, "killed", "TERM", "success", Exit{Ran: true, ExitCode: 143, Signal: syscall.SIGTERM, Result: "success"}, 143, "TERM", "signal: SIGTERM"},
		{"RuntimeMaxSec=", 2, 15, "killed", "TERM", "timeout", Exit{Ran: true, ExitCode: 143, Signal: syscall.SIGTERM, Result: "timeout"}, 143, "TERM", "signal: SIGTERM (result timeout)"},
		{"oom-kill", 2, 9, "killed", "KILL", "oom-kill", Exit{Ran: true, ExitCode: 137, Signal: syscall.SIGKILL, Result: "oom-kill"}, 137, "KILL", "signal: SIGKILL (result oom-kill)"},
		{"core dump", 3, 11, "dumped", "SEGV", "core-dump", Exit{Ran: true, ExitCode: 139, Signal: syscall.SIGSEGV, CoreDumped: true, Result: "core-dump"}, 139, "SEGV", "signal: SIGSEGV (core dumped)"},
		{"HUP", 2, 1, "killed", "HUP", "signal", Exit{Ran: true, ExitCode: 129, Signal: syscall.SIGHUP, Result: "signal"}, 129, "HUP", "signal: SIGHUP"},
		{"SYS", 2, 31, "killed", "SYS", "signal", Exit{Ran: true, ExitCode: 159, Signal: syscall.SIGSYS, Result: "signal"}, 159, "SYS", "signal: SIGSYS"},
		{"32", 2, 32, "killed", "32", "signal", Exit{Ran: true, ExitCode: 160, Signal: 32, Result: "signal"}, 160, "32", "signal: SIG32"},
		{"RTMIN+0", 2, 34, "killed", "RTMIN+0", "signal", Exit{Ran: true, ExitCode: 162, Signal: 34, Result: "signal"}, 162, "RTMIN+0", "signal: SIGRTMIN+0"},
		{"RTMIN+30", 2, 64, "killed", "RTMIN+30", "signal", Exit{Ran: true, ExitCode: 192, Signal: 64, Result: "signal"}, 192, "RTMIN+30", "signal: SIGRTMIN+30"},
		{"203/EXEC", 1, 203, "exited", "203", "exit-code", Exit{Ran: true, ExitCode: 126, Result: "exit-code", ExecError: ErrExecUnknown}, 126, "", "cannot execute: systemd exit status 203/EXEC, the unit's journal says why (exit status 126)"},
		{"no process, failed", 0, 0, "", "", "resources", Exit{Result: "resources"}, -1, "", "no process ran (result resources)"},
		{"no process, success", 0, 0, "", "", "success", Exit{Result: "success"}, -1, "", "no process ran"},
	} {
		fromMain := ExitFromMain(c.mainCode, c.mainStatus, c.result)
		fromEnv, err := ExitFromEnv(c.result, c.envCode, c.envStatus)
		if err != nil || fromMain != c.want || fromEnv != c.want {
			t.Errorf("%s: ExitFromMain = %+v, ExitFromEnv = %+v, %v; want both %+v", c.name, fromMain, fromEnv, err, c.want)
		}
		code, signal := c.want.JSON()
		got := -1
		if code != nil {
			got = *code
		}
		if got != c.exitCode || signal != c.signal {
			t.Errorf("%s: JSON() = %d, %q; want %d, %q (-1: null)", c.name, got, signal, c.exitCode, c.signal)
		}
		if back := ParseExit(code, signal, c.result); back.ExitCode != c.want.ExitCode || back.Signal != c.want.Signal || back.Ran != c.want.Ran || back.CoreDumped != c.want.CoreDumped {
			t.Errorf("%s: ParseExit(JSON()) = %+v; want %+v but for ExecError", c.name, back, c.want)
		}
		if s := c.want.String(); s != c.text {
			t.Errorf("%s: String() = %q; want %q", c.name, s, c.text)
		}
		// How is String without systemd's result, which the summary
		// line tells on its own ("signal: SIGTERM, result timeout").
		if how, _, _ := strings.Cut(c.text, " (result "); c.want.How() != how {
			t.Errorf("%s: How() = %q; want %q", c.name, c.want.How(), how)
		}
	}
}

// A job record written before exit_code was set for a signal reads as
// one written today.
func TestParseExitOldSignal(t *testing.T) {
	got := ParseExit(nil, "KILL", "signal")
	if want := (Exit{Ran: true, ExitCode: 137, Signal: syscall.SIGKILL, Result: "signal"}); got != want {
		t.Errorf("ParseExit(null, KILL) = %+v; want %+v", got, want)
	}
}

// A command that cannot be executed exits 127 if it or its interpreter
// does not exist, 126 for any other reason, wherever the error came from.
func TestExecFailed(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{syscall.ENOEXEC, 126},
		{syscall.EACCES, 126},
		{fmt.Errorf("/x: interpreter /nope: %w", syscall.ENOENT), 127},
		{syscall.ENOTDIR, 127},
		{exec.ErrNotFound, 127},
		{errors.New("other"), 126},
	} {
		x := ExecFailed(c.err)
		if !x.Ran || x.ExitCode != c.code || x.ExecError != c.err || x.Signal != 0 {
			t.Errorf("ExecFailed(%v) = %+v; want exit code %d", c.err, x, c.code)
		}
	}
	// systemd's 203/EXEC, with the reason the caller found.
	got := ExitFromMain(1, 203, "exit-code").WithExecError(syscall.ENOENT)
	if got.ExitCode != 127 || got.Result != "exit-code" || got.ExecError != syscall.ENOENT {
		t.Errorf("203/EXEC with ENOENT = %+v; want exit code 127, result exit-code", got)
	}
	if got := ExitFromMain(1, 3, "exit-code").WithExecError(syscall.ENOENT); got.ExitCode != 3 || got.ExecError != nil {
		t.Errorf("exit 3 with an exec error = %+v; want it unchanged", got)
	}
}

func TestExitFromEnvErrors(t *testing.T) {
	for _, c := range []struct{ result, code, status, err string }{
		{"", "exited", "0", `SERVICE_RESULT "": must be a systemd service result such as success or exit-code`},
		{"Success", "exited", "0", `SERVICE_RESULT "Success": must be a systemd service result such as success or exit-code`},
		{"success", "exited", "", `EXIT_STATUS "": must be an exit status 0..255 when EXIT_CODE is exited`},
		{"success", "exited", "256", `EXIT_STATUS "256": must be an exit status 0..255 when EXIT_CODE is exited`},
		{"success", "exited", "-1", `EXIT_STATUS "-1": must be an exit status 0..255 when EXIT_CODE is exited`},
		{"success", "exited", "+1", `EXIT_STATUS "+1": must be an exit status 0..255 when EXIT_CODE is exited`},
		{"success", "exited", "01", `EXIT_STATUS "01": must be an exit status 0..255 when EXIT_CODE is exited`},
		{"success", "exited", "TERM", `EXIT_STATUS "TERM": must be an exit status 0..255 when EXIT_CODE is exited`},
		{"signal", "killed", "15", `EXIT_STATUS "15": must be a signal name when EXIT_CODE is killed`},
		{"signal", "killed", "SIGTERM", `EXIT_STATUS "SIGTERM": must be a signal name when EXIT_CODE is killed`},
		{"signal", "killed", "RTMIN+31", `EXIT_STATUS "RTMIN+31": must be a signal name when EXIT_CODE is killed`},
		{"signal", "killed", "RTMIN+01", `EXIT_STATUS "RTMIN+01": must be a signal name when EXIT_CODE is killed`},
		{"signal", "dumped", "34", `EXIT_STATUS "34": must be a signal name when EXIT_CODE is dumped`},
		{"signal", "killed", "", `EXIT_STATUS "": must be a signal name when EXIT_CODE is killed`},
		{"signal", "trapped", "TRAP", `EXIT_CODE "trapped": must be exited, killed or dumped`},
		{"success", "", "0", `EXIT_STATUS "0" without EXIT_CODE`},
	} {
		_, err := ExitFromEnv(c.result, c.code, c.status)
		if err == nil || err.Error() != c.err {
			t.Errorf("ExitFromEnv(%q, %q, %q) error = %v; want %s", c.result, c.code, c.status, err, c.err)
		}
	}
}
