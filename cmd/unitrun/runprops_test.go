package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/unit"
)

// malformedValues are values of each kind that systemd-run refuses, or
// that its manager refuses.
var malformedValues = map[string]string{
	"MemoryMax": "lots", "TasksMax": "1K", "CPUQuota": "0%", "CPUWeight": "0", "IOWeight": "10001",
	"CPUShares": "1", "BlockIOWeight": "5", "AllowedCPUs": "x", "DeviceAllow": "/dev/null rwx", "IOReadBandwidthMax": "/dev/null",
	"IODeviceWeight": "/dev/null x", "IPAddressAllow": "10.0.0.1/33", "SocketBindAllow": "tcp:0",
	"ManagedOOMMemoryPressureLimit": "150%", "Slice": "bad", "WorkingDirectory": "relative",
	"ProtectSystem": "read-only", "PrivateTmp": "maybe", "SyslogLevel": "loud", "SyslogFacility": "local9",
	"CPUSchedulingPolicy": "fast", "Nice": "20", "OOMScoreAdjust": "1001", "IOSchedulingClass": "urgent",
	"IOSchedulingPriority": "8", "UMask": "0800", "TimerSlackNSec": "5 parsecs", "LogRateLimitBurst": "-1",
	"MountFlags": "rprivate", "Environment": "1A=b", "UnsetEnvironment": "A=1 1B", "PassEnvironment": "A=1",
	"SetCredential": "nodata", "SetCredentialEncrypted": "cmp:!!", "StandardInput": "printer",
	"StandardOutput": "printer", "StandardInputText": `\q`, "StandardInputData": "!!", "LimitNOFILE": "10:5",
	"LimitCORE": "lots", "LimitCPU": "5 parsecs", "LimitNICE": "+20", "NUMAPolicy": "round-robin",
	"RestrictNamespaces": "bogus", "BindPaths": "/a:/b:bogus", "RootHash": "beef", "RootHashSignature": "x",
	"MountImages": "/img", "KillMode": "all", "KillSignal": "SIGFOO", "Type": "notify-reload", "Restart": "sometimes",
	"TimeoutSec": "-1", "ExecStopPost": `/bin/true "open`, "SuccessExitStatus": "256", "CollectMode": "failed",
	"JobTimeoutSec": "x", "StartLimitBurst": "x", "FailureActionExitStatus": "256", "After": "a",
	"Requires": "getty@.service", "WantedBy": "unitrun-cmp-dep.target", "ExecStart": "/bin/true",
	"SystemCallErrorNumber": "ENOSUCH", "StateDirectory": `"open`, "EnvironmentFile": "relative.env",
}

// What systemd-run refuses, or its manager refuses, unitrun refuses: with
// exit status 2 and an error that names the property if it can tell
// before creating anything, else with the manager's error, exit 125.
func TestRunPropertiesRefusedLikeSystemdRun(t *testing.T) {
	for i, name := range slices.Sorted(maps.Keys(malformedValues)) {
		flag := name + "=" + malformedValues[name]
		_, refErrs, refCode := systemdRun(t, "-q", "--wait", "--unit", fmt.Sprintf("unitrun-bad-ref-%d.service", i), "-p", flag, "/bin/true")
		_, errs, code := unitrun(t, "run", "-q", "-u", fmt.Sprintf("unitrun-bad-run-%d.service", i), "-p", flag, "--", "/bin/true")
		if refCode == 0 {
			t.Errorf("systemd-run -p %s succeeded", flag)
		}
		switch {
		case code == 2 && strings.Contains(errs, "--property") && strings.Contains(errs, `"`+name+`"`):
		case code == 125 && strings.Contains(errs, "unitrun-bad-run"):
		default:
			t.Errorf("run -p %s: exit %d, stderr %q; want 2 and an error naming %s, or 125 (systemd-run: exit %d, %q)", flag, code, errs, name, refCode, refErrs)
		}
	}
}

// The machine-config daemon's call: an environment file that may be
// missing, a client id, and the command's output; as systemd-run gives it.
func TestRunLikeMachineConfigDaemon(t *testing.T) {
	env := filepath.Join(t.TempDir(), "proxy.env")
	script := `echo "$RPMOSTREE_CLIENT_ID $HTTPS_PROXY"`
	for _, file := range []string{env, "/nonexistent/proxy.env"} {
		if err := os.WriteFile(env, []byte("HTTPS_PROXY=http://proxy.example:3128\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want, errs, code := systemdRun(t, "-q", "--wait", "--pipe", "--collect", "-p", "EnvironmentFile=-"+file, "-E", "RPMOSTREE_CLIENT_ID=mco", "sh", "-c", script)
		if code != 0 {
			t.Fatalf("systemd-run: exit %d, %s", code, errs)
		}
		got, errs, code := unitrun(t, "run", "-q", "-p", "EnvironmentFile=-"+file, "-E", "RPMOSTREE_CLIENT_ID=mco", "--", "sh", "-c", script)
		if code != 0 || got != want {
			t.Errorf("EnvironmentFile=-%s: exit %d, stdout %q (stderr %q); systemd-run gives %q", file, code, got, errs, want)
		}
	}
}

// -p help lists the known properties on stdout, one a line.
func TestRunPropertyHelp(t *testing.T) {
	out, errs, code := unitrun(t, "run", "-p", "help")
	if code != 0 || out != strings.Join(unit.KnownProperties(), "\n")+"\n" || !strings.Contains(out, "\nEnvironmentFile\n") {
		t.Errorf("run -p help: exit %d, stderr %q, stdout %d bytes", code, errs, len(out))
	}
	_, errs, code = unitrun(t, "run", "-p", "EnviromentFile=/x", "--", "true")
	if code != 2 || !strings.Contains(errs, `"EnviromentFile": unknown (did you mean "EnvironmentFile"?)`) || !strings.Contains(errs, "-p help") {
		t.Errorf("run -p EnviromentFile=/x: exit %d, stderr %q; want 2 and the nearest name", code, errs)
	}
}

// A setting of a systemd newer than the manager's (RestartSteps=, 254, on
// the test manager's 252) is refused with exit status 2 and both versions
// named, before anything is created: the name stays free. systemd-run 252
// refuses it too, as unknown. A near miss of a newer setting's name is a
// typo with a suggestion, as one of systemd 252's is. With --json, waiting
// or not, stdout is the {"error"} of any usage error (it was the object of
// a run, with an empty unit, when waiting).
func TestRunNewerPropertyRefused(t *testing.T) {
	if _, errs, code := systemdRun(t, "-q", "--wait", "-p", "RestartSteps=3", "/bin/true"); code == 0 {
		t.Skipf("skipping: the test manager takes RestartSteps= (systemd-run: %s)", errs)
	}
	const name = "unitrun-newer-prop.service"
	out, errs, code := unitrun(t, "run", "-q", "-u", name, "-p", "RestartSteps=3", "--", "/bin/true")
	if want := "--property: RestartSteps= needs systemd 254; this manager is 252"; code != 2 || out != "" || !strings.Contains(errs, want) {
		t.Errorf("run -p RestartSteps=3: exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, want)
	}
	for _, wait := range [][]string{nil, {"--no-wait"}} {
		args := append(append([]string{"run", "--json", "-u", name}, wait...), "-p", "RestartSteps=3", "--", "/bin/true")
		out, _, code := unitrun(t, args...)
		if want := `{"error":"--property: RestartSteps= needs systemd 254; this manager is 252"}` + "\n"; code != 2 || out != want {
			t.Errorf("unitrun %q: exit %d, stdout %q; want 2 and %q", args, code, out, want)
		}
	}
	if _, errs, code := unitrun(t, "run", "-q", "-u", name, "--", "/bin/true"); code != 0 {
		t.Errorf("run -u %s after the refusal: exit %d, %s", name, code, errs)
	}
	_, errs, code = unitrun(t, "run", "-p", "RestartStep=3", "--", "/bin/true")
	if code != 2 || !strings.Contains(errs, `"RestartStep": unknown (did you mean "RestartSteps"?)`) {
		t.Errorf("run -p RestartStep=3: exit %d, stderr %q; want 2 and the nearest name", code, errs)
	}
}

// Resource limits given with -p reach the command as systemd-run's do.
func TestRunLimitsLikeSystemdRun(t *testing.T) {
	flags := []string{"-p", "LimitNOFILE=1024:4096", "-p", "LimitCORE=infinity", "-p", "LimitFSIZE=1M:2M", "-p", "LimitCPU=1min"}
	script := "ulimit -Sn; ulimit -Hn; ulimit -c; ulimit -Sf; ulimit -Hf; ulimit -t"
	want, errs, code := systemdRun(t, append(append([]string{"-q", "--wait", "--pipe"}, flags...), "sh", "-c", script)...)
	if code != 0 {
		t.Fatalf("systemd-run: exit %d, %s", code, errs)
	}
	got, errs, code := unitrun(t, append(append([]string{"run", "-q"}, flags...), "--", "sh", "-c", script)...)
	if code != 0 || got != want {
		t.Errorf("run %q: exit %d, stdout %q (stderr %q); systemd-run gives %q", flags, code, got, errs, want)
	}
}
