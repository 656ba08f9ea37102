package pod

import "testing"

func TestExitFromEnv(t *testing.T) {
	for _, c := range []struct {
		result, code, status string
		want                 Exit
	}{
		{"success", "exited", "0", Exit{Code: 0, Result: "success", Success: true}},
		{"exit-code", "exited", "4", Exit{Code: 4, Result: "exit-code"}},
		{"success", "exited", "3", Exit{Code: 3, Result: "success", Success: true}}, // SuccessExitStatus=3
		{"exit-code", "exited", "203", Exit{Code: 203, Result: "exit-code"}},        // exec failed
		{"exit-code", "exited", "255", Exit{Code: 255, Result: "exit-code"}},
		{"success", "killed", "TERM", Exit{Code: 143, Signal: "TERM", Result: "success", Success: true}},
		{"signal", "killed", "KILL", Exit{Code: 137, Signal: "KILL", Result: "signal"}},
		{"timeout", "killed", "KILL", Exit{Code: 137, Signal: "KILL", Result: "timeout"}},
		{"core-dump", "dumped", "SEGV", Exit{Code: 139, Signal: "SEGV", Result: "core-dump"}},
		{"signal", "killed", "HUP", Exit{Code: 129, Signal: "HUP", Result: "signal"}},
		{"signal", "killed", "SYS", Exit{Code: 159, Signal: "SYS", Result: "signal"}},
		{"signal", "killed", "32", Exit{Code: 160, Signal: "32", Result: "signal"}},
		{"signal", "killed", "RTMIN+0", Exit{Code: 162, Signal: "RTMIN+0", Result: "signal"}},
		{"signal", "killed", "RTMIN+4", Exit{Code: 166, Signal: "RTMIN+4", Result: "signal"}},
		{"signal", "killed", "RTMIN+30", Exit{Code: 192, Signal: "RTMIN+30", Result: "signal"}},
		{"oom-kill", "killed", "KILL", Exit{Code: 137, Signal: "KILL", Result: "oom-kill"}},
		{"resources", "", "", Exit{Code: 255, Result: "resources"}},
		{"success", "", "", Exit{Code: 0, Result: "success", Success: true}},
	} {
		got, err := ExitFromEnv(c.result, c.code, c.status)
		if err != nil || got != c.want {
			t.Errorf("ExitFromEnv(%q, %q, %q) = %+v, %v; want %+v", c.result, c.code, c.status, got, err, c.want)
		}
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
