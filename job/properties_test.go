package job_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// validValues holds, for every setting of systemd 252's table of what
// systemd-run -p takes for a service (src/shared/bus-unit-util.c), a valid
// value; the settings of one line share it.
var validValues = map[string]string{}

func init() {
	set := func(value string, names ...string) {
		for _, n := range names {
			validValues[n] = value
		}
	}
	// cgroup
	set("yes", "CPUAccounting", "MemoryAccounting", "IOAccounting", "BlockIOAccounting", "TasksAccounting",
		"IPAccounting", "Delegate")
	set("closed", "DevicePolicy")
	set("kill", "ManagedOOMSwap", "ManagedOOMMemoryPressure")
	set("avoid", "ManagedOOMPreference")
	set("50%", "ManagedOOMMemoryPressureLimit", "CPUQuota")
	set("unitrun-cmp.slice", "Slice")
	set("50", "CPUWeight", "StartupCPUWeight", "IOWeight", "StartupIOWeight")
	set("512", "CPUShares", "StartupCPUShares", "BlockIOWeight", "StartupBlockIOWeight")
	set("0", "AllowedCPUs", "StartupAllowedCPUs", "AllowedMemoryNodes", "StartupAllowedMemoryNodes", "CPUAffinity",
		"NUMAMask")
	set("io", "DisableControllers")
	set("64M", "MemoryMin", "DefaultMemoryLow", "DefaultMemoryMin", "MemoryLow", "MemoryHigh")
	set("1G", "MemoryMax", "MemorySwapMax", "MemoryLimit")
	set("100", "TasksMax", "LogRateLimitBurst", "FileDescriptorStoreMax")
	set("10ms", "CPUQuotaPeriodSec")
	set("/dev/null rw", "DeviceAllow")
	set("/dev/null 1M", "IOReadBandwidthMax", "IOWriteBandwidthMax", "IOReadIOPSMax", "IOWriteIOPSMax",
		"BlockIOReadBandwidth", "BlockIOWriteBandwidth")
	set("/dev/null 100", "IODeviceWeight", "BlockIODeviceWeight")
	set("/dev/null 5ms", "IODeviceLatencyTargetSec")
	set("10.0.0.0/8 ::1", "IPAddressAllow")
	set("any", "IPAddressDeny")
	set("/sys/fs/bpf/unitrun-cmp", "IPIngressFilterPath", "IPEgressFilterPath")
	set("ingress:/sys/fs/bpf/unitrun-cmp", "BPFProgram")
	set("ipv4:tcp:80", "SocketBindAllow")
	set("any", "SocketBindDeny")
	// execute
	set("root", "User", "Group", "SupplementaryGroups")
	set("cmp", "UtmpIdentifier", "SyslogIdentifier", "LogNamespace", "ConfigurationDirectory", "StateDirectory",
		"RuntimeDirectory", "CacheDirectory", "LogsDirectory", "Description", "JobTimeoutRebootArgument",
		"RebootArgument")
	set("init", "UtmpMode")
	set("login", "PAMName")
	set("/dev/console", "TTYPath")
	set("/", "RootDirectory")
	set("system_u:system_r:unconfined_t:s0", "SELinuxContext")
	set("/nonexistent.img", "RootImage")
	set("/nonexistent.verity", "RootVerity")
	set("restart", "RuntimeDirectoryPreserve")
	set("x86-64", "Personality")
	set("private", "KeyringMode")
	set("invisible", "ProtectProc")
	set("pid", "ProcSubset")
	set("/proc/self/ns/net", "NetworkNamespacePath")
	set("/proc/self/ns/ipc", "IPCNamespacePath")
	set("/tmp", "WorkingDirectory", "ReadWriteDirectories", "ReadOnlyDirectories", "InaccessibleDirectories",
		"ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths", "RequiresMountsFor",
		"BindReadOnlyPaths", "SourcePath")
	set("strict", "ProtectSystem")
	set("read-only", "ProtectHome")
	set("yes", "IgnoreSIGPIPE", "TTYVHangup", "TTYReset", "TTYVTDisallocate", "PrivateTmp", "PrivateDevices",
		"PrivateNetwork", "PrivateUsers", "PrivateMounts", "PrivateIPC", "NoNewPrivileges", "SyslogLevelPrefix",
		"MemoryDenyWriteExecute", "RestrictRealtime", "DynamicUser", "RemoveIPC", "ProtectKernelTunables",
		"ProtectKernelModules", "ProtectKernelLogs", "ProtectClock", "ProtectControlGroups", "MountAPIVFS",
		"CPUSchedulingResetOnFork", "LockPersonality", "ProtectHostname", "RestrictSUIDSGID")
	set("/usr/bin /bin", "ExecSearchPath")
	set("/nonexistent", "ExtensionDirectories")
	set("native", "SystemCallArchitectures")
	set("info", "SyslogLevel")
	set("debug", "LogLevelMax")
	set("local0", "SyslogFacility")
	set("keep-caps", "SecureBits")
	set("batch", "CPUSchedulingPolicy")
	set("0", "CPUSchedulingPriority")
	set("100", "OOMScoreAdjust")
	set("default elf-headers", "CoredumpFilter")
	set("5", "Nice")
	set("EPERM", "SystemCallErrorNumber")
	set("best-effort", "IOSchedulingClass")
	set("4", "IOSchedulingPriority")
	set("0750", "RuntimeDirectoryMode", "StateDirectoryMode", "CacheDirectoryMode", "LogsDirectoryMode",
		"ConfigurationDirectoryMode")
	set("0027", "UMask")
	set("50us", "TimerSlackNSec")
	set("5s", "LogRateLimitIntervalSec", "RestartSec", "TimeoutStartSec", "TimeoutStopSec", "TimeoutAbortSec",
		"RuntimeMaxSec", "RuntimeRandomizedExtraSec", "WatchdogSec", "TimeoutSec", "StartLimitIntervalSec")
	set("24", "TTYRows")
	set("80", "TTYColumns")
	set("shared", "MountFlags")
	set(`A=1 "B=two words"`, "Environment")
	set("A", "UnsetEnvironment")
	set("PATH", "PassEnvironment")
	set("-/etc/mco/proxy.env", "EnvironmentFile")
	set("cmp:secret", "SetCredential")
	set("cmp:aGVsbG8=", "SetCredentialEncrypted")
	set("cmp:/etc/hostname", "LoadCredential", "LoadCredentialEncrypted")
	set("CMP=1", "LogExtraFields")
	set("null", "StandardInput", "StandardOutput", "StandardError")
	set(`hello\tworld`, "StandardInputText")
	set("aGVsbG8=", "StandardInputData")
	for _, n := range []string{"FSIZE", "DATA", "STACK", "CORE", "RSS", "AS", "MEMLOCK", "MSGQUEUE"} {
		validValues["Limit"+n] = "1M:infinity"
	}
	for _, n := range []string{"NOFILE", "NPROC", "LOCKS", "SIGPENDING", "RTPRIO"} {
		validValues["Limit"+n] = "5:10"
	}
	set("1min:infinity", "LimitCPU")
	set("500ms", "LimitRTTIME")
	set("+5", "LimitNICE")
	set("-unitrun-cmp", "AppArmorProfile", "SmackProcessLabel")
	set("cap_chown cap_kill", "CapabilityBoundingSet")
	set("cap_chown", "AmbientCapabilities")
	set("default", "NUMAPolicy")
	set("AF_UNIX AF_INET", "RestrictAddressFamilies")
	set("ext4 tmpfs", "RestrictFileSystems")
	set("@system-service", "SystemCallFilter")
	set("~@mount", "SystemCallLog")
	set("lo", "RestrictNetworkInterfaces")
	set("~net", "RestrictNamespaces")
	set("/tmp:/mnt:norbind -/nonexistent", "BindPaths")
	set("/mnt:ro", "TemporaryFileSystem")
	set("00112233445566778899aabbccddeeff", "RootHash")
	set("base64:aGVsbG8=", "RootHashSignature")
	set("root:ro", "RootImageOptions")
	set("-/nonexistent.img:/mnt:root:ro", "MountImages")
	set("-/nonexistent.raw", "ExtensionImages")
	// kill
	set("mixed", "KillMode")
	set("yes", "SendSIGHUP", "SendSIGKILL")
	set("SIGINT", "KillSignal", "RestartKillSignal", "FinalKillSignal", "WatchdogSignal")
	// service
	set("/run/unitrun-cmp.pid", "PIDFile")
	set("org.example.Cmp", "BusName")
	set("/nonexistent", "USBFunctionDescriptors", "USBFunctionStrings")
	set("kill", "TimeoutStartFailureMode", "TimeoutStopFailureMode", "OOMPolicy")
	set("oneshot", "Type")
	set("cgroup", "ExitType")
	set("on-failure", "Restart")
	set("all", "NotifyAccess")
	set("yes", "PermissionsStartOnly", "RootDirectoryStartOnly", "RemainAfterExit", "GuessMainPID")
	set("/bin/true", "ExecCondition", "ExecStartPre", "ExecReload", "ExecStop", "ExecStopPost")
	set("-/bin/echo $HOME", "ExecStartPost")
	set(":/bin/true x", "ExecConditionEx", "ExecStartPreEx", "ExecReloadEx")
	set("+/bin/true", "ExecStartPostEx", "ExecStopEx", "ExecStopPostEx")
	set("3 SIGUSR1 INVALIDARGUMENT", "RestartPreventExitStatus", "RestartForceExitStatus", "SuccessExitStatus")
	// unit
	set("replace", "OnFailureJobMode")
	set("none", "JobTimeoutAction", "StartLimitAction", "FailureAction", "SuccessAction")
	set("inactive", "CollectMode")
	set("yes", "StopWhenUnneeded", "RefuseManualStart", "RefuseManualStop", "AllowIsolate", "IgnoreOnIsolate")
	set("no", "DefaultDependencies")
	set("5min", "JobTimeoutSec", "JobRunningTimeoutSec")
	set("5", "StartLimitBurst")
	set("3", "SuccessActionExitStatus", "FailureActionExitStatus")
	set("unitrun-cmp-dep.target", "Requires", "Requisite", "Wants", "BindsTo", "PartOf", "Upholds", "Conflicts",
		"Before", "After", "OnSuccess", "OnFailure", "PropagatesReloadTo", "ReloadPropagatedFrom",
		"PropagatesStopTo", "StopPropagatedFrom", "JoinsNamespaceOf", "RequiredBy", "RequisiteOf", "WantedBy",
		"BoundBy", "UpheldBy", "ConsistsOf", "ConflictedBy", "OnSuccessOf", "OnFailureOf", "Triggers",
		"TriggeredBy", "References", "ReferencedBy", "InSlice", "SliceOf")
	set("man:true(1) https://example.com/", "Documentation")
	set("needs-restart", "Markers")
	conditions := map[string]string{
		"Architecture": "x86-64", "Firmware": "uefi", "Virtualization": "!container", "Host": "!nohost",
		"KernelCommandLine": "!unitrun.cmp", "KernelVersion": ">=3.0", "Credential": "cmp", "Security": "!selinux",
		"Capability": "CAP_CHOWN", "ACPower": "true", "NeedsUpdate": "|/etc", "FirstBoot": "no",
		"PathExists": "/tmp", "PathExistsGlob": "/t*", "PathIsDirectory": "/tmp", "PathIsSymbolicLink": "!/tmp",
		"PathIsMountPoint": "/", "PathIsReadWrite": "/tmp", "PathIsEncrypted": "!/", "DirectoryNotEmpty": "/etc",
		"FileNotEmpty": "/etc/hostname", "FileIsExecutable": "/bin/true", "User": "root", "Group": "root",
		"ControlGroupController": "memory", "CPUs": ">0", "Memory": ">1M", "Environment": "PATH",
		"CPUFeature": "fpu", "OSRelease": "ID=debian", "MemoryPressure": "90%", "CPUPressure": "90%",
		"IOPressure": "90%",
	}
	for kind, v := range conditions {
		set(v, "Condition"+kind, "Assert"+kind)
	}
	// Settings systemd-run takes that unitrun leaves to argv.
	set("/bin/false", "ExecStart", "ExecStartEx")
}

// TestValidValuesCoverTable checks that the table above gives a value to
// every property unitrun knows of systemd 252 (the test manager's; unit's
// TestNewerProperties checks the newer ones).
func TestValidValuesCoverTable(t *testing.T) {
	for _, name := range unit.KnownProperties() {
		if _, ok := validValues[name]; !ok && unit.PropertySince(name) == unit.Oldest {
			t.Errorf("no valid value for %s", name)
		}
	}
}

// A setting newer than the manager's systemd (RestartSteps=, systemd 254,
// on the test manager's 252) is refused before anything is created, with
// an error that names both versions; the name stays free, and the same
// command without it runs.
func TestNewerPropertyRefused(t *testing.T) {
	conn := systemdtest.Conn(t)
	version, err := conn.Version(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := unit.ParseVersion(version); !ok || v >= 254 {
		t.Skipf("skipping: the test manager is systemd %q, which takes RestartSteps=", version)
	}
	props, err := unit.ParseProperty("RestartSteps=3")
	if err != nil {
		t.Fatal(err)
	}
	c := job.Command(conn, "/bin/true")
	c.Name = "unitrun-newer-prop.service"
	c.Properties = props
	err = c.Run()
	var ve *unit.VersionError
	want := "RestartSteps= needs systemd 254; this manager is 252"
	if !errors.As(err, &ve) || err.Error() != want || c.Unit != "" {
		t.Fatalf("Run with RestartSteps=3: %v (unit %q), want %q and no unit", err, c.Unit, want)
	}
	again := job.Command(conn, "/bin/true")
	again.Name = c.Name
	again.Properties, err = unit.ParseProperty("RestartSec=1")
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Run(); err != nil {
		t.Fatalf("the same name with a setting of systemd 252: %v", err)
	}
}

// Every property of systemd-run's table, with a valid value, ends up the
// same on a unit that job.Cmd made from unit.ParseProperty as on one that
// systemd-run -p made, on the same manager: the units are read back with
// systemctl show before anything runs (their start waits for a unit whose
// start never ends). Where the manager (a user manager here) refuses the
// setting, it refuses it from both, and neither unit is left (systemd
// collects systemd-run's; unitrun drops the reference it took): a
// dependency on unitrun-cmp-dep.target, which has no unit file, is
// refused when it pulls the target in or needs it active (Requires=,
// BindsTo=, Requisite=), and RefuseManualStart=yes is refused for the
// start that makes the unit. The one difference left out is unitrun's
// own journal field UNITRUN_RUN= (the mark of its run, see docs/job.md),
// which every unitrun unit carries in LogExtraFields=.
func TestPropertiesLikeSystemdRun(t *testing.T) {
	if _, err := exec.LookPath("systemd-run"); err != nil {
		t.Skipf("skipping: systemd-run not found: %v", err)
	}
	names := slices.Sorted(maps.Keys(validValues))
	var shown []string
	for _, name := range names {
		shown = append(shown, showNames(name, validValues[name])...)
	}
	// systemd-run, four at a time.
	wantMade, want := makeAll(t, names, shown, func(i int, unitName, blocker string, made chan<- error) {
		name := names[i]
		out, err := exec.Command("systemd-run", "--user", "-q", "--no-block", "--unit", unitName, "-p", "After="+blocker,
			"-p", name+"="+validValues[name], "/bin/true").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		made <- err
	})
	// job.Cmd, whose Start returns once the start job ends.
	conn := systemdtest.Conn(t)
	gotMade, got := makeAll(t, names, shown, func(i int, unitName, blocker string, made chan<- error) {
		name := names[i]
		props, err := unit.ParseProperty(name + "=" + validValues[name])
		if err != nil {
			made <- err
			return
		}
		c := job.Command(conn, "/bin/true")
		c.Name = unitName
		c.Properties = append([]unit.Property{{Name: "After", Value: dbus.MakeVariant([]string{blocker})}}, props...)
		started := make(chan error, 1)
		go func() { started <- c.Start() }()
		for !queued(t, conn, unitName) {
			select {
			case err := <-started:
				made <- err
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		made <- nil
		<-started // canceled
	})
	accepted := 0
	for i, name := range names {
		show := showNames(name, validValues[name])
		switch {
		case (wantMade[i] == nil) != (gotMade[i] == nil):
			t.Errorf("-p %s=%s: systemd-run: %v; unitrun: %v", name, validValues[name], wantMade[i], gotMade[i])
		case wantMade[i] != nil:
			// Refused by both: neither unit is there to show.
		case pick(withoutMark(got[i]), show) != pick(want[i], show):
			t.Errorf("-p %s=%s: unitrun's unit shows\n%s\nsystemd-run's\n%s", name, validValues[name], pick(withoutMark(got[i]), show), pick(want[i], show))
		}
		if wantMade[i] == nil {
			accepted++
		}
	}
	t.Logf("%d settings compared, %d of them accepted by the user manager", len(names), accepted)
}

// makeAll makes, with mk, a unit for each setting of names, ordered after
// a unit whose start never ends, so that none starts; mk tells on made,
// while the unit waits, nil if it made it or else why not. makeAll then
// reads back the properties shown of each unit and removes them all,
// also when it fails.
func makeAll(t *testing.T, names, shown []string, mk func(i int, unitName, blocker string, made chan<- error)) ([]error, []map[string]string) {
	const blocker = "unitrun-cmp-blocker.service"
	if out, err := exec.Command("systemd-run", "--user", "-q", "--no-block", "--unit", blocker, "-p", "Type=oneshot",
		"-p", "TimeoutStartSec=infinity", "sleep", "infinity").CombinedOutput(); err != nil {
		t.Fatalf("starting %s: %v: %s", blocker, err, out)
	}
	var waits sync.WaitGroup
	// Canceling the start jobs ends every unit of the test, even those
	// that refuse a manual stop; it runs when a t.Fatal ends the test too.
	// unitrun.slice is the parent of unitrun-cmp.slice (Slice=).
	defer func() {
		exec.Command("systemctl", "--user", "cancel").Run()
		waits.Wait()
		exec.Command("systemctl", "--user", "stop", blocker, "unitrun-cmp.slice", "unitrun.slice").Run()
		exec.Command("systemctl", "--user", "reset-failed", "unitrun-cmp-*").Run()
	}()
	units := make([]string, len(names))
	made := make([]error, len(names))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				units[i] = fmt.Sprintf("unitrun-cmp-%d.service", i)
				ch := make(chan error, 1)
				waits.Go(func() { mk(i, units[i], blocker, ch) })
				made[i] = <-ch
			}
		})
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	return made, showAll(t, units, shown)
}

// showNames returns the properties systemctl show reads back for an
// assignment: the names of the properties systemd-run sends for it (a
// percentage of memory is read back as the limit it gives).
func showNames(name, value string) []string {
	props, err := unit.ParseProperty(name + "=" + value)
	if err != nil {
		return []string{name}
	}
	var names []string
	for _, p := range props {
		names = append(names, strings.TrimSuffix(p.Name, "Scale"))
	}
	return names
}

// showAll reads back the properties names of each unit: one line per
// property, its words sorted (dependencies come back in any order).
func showAll(t *testing.T, units, names []string) []map[string]string {
	args := append([]string{"--user", "show", "-p", strings.Join(names, ",")}, units...)
	out, err := exec.Command("systemctl", args...).Output()
	if err != nil {
		t.Fatalf("systemctl show: %v", err)
	}
	blocks := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n\n")
	if len(blocks) != len(units) {
		t.Fatalf("systemctl show gave %d blocks for %d units", len(blocks), len(units))
	}
	props := make([]map[string]string, len(units))
	for i, b := range blocks {
		props[i] = map[string]string{}
		for _, l := range strings.Split(b, "\n") {
			k, v, _ := strings.Cut(l, "=")
			words := strings.Fields(v)
			slices.Sort(words)
			props[i][k] = strings.Join(words, " ")
		}
	}
	return props
}

// pick formats the properties names of props.
func pick(props map[string]string, names []string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%s\n", n, props[n])
	}
	return b.String()
}

// queued reports whether the unit is loaded with its start job queued.
// systemd makes a unit and queues its start in one call, so a unit whose
// start it refuses, loaded until unitrun drops its reference, never
// shows a job.
func queued(t *testing.T, conn *manager.Conn, unitName string) bool {
	props, err := conn.Properties(context.Background(), unitName, manager.UnitIface)
	return err == nil && props["LoadState"].Value() == "loaded" && manager.JobPending(props)
}

// withoutMark returns props without the word UNITRUN_RUN=... that
// unitrun adds to LogExtraFields= of every unit it makes.
func withoutMark(props map[string]string) map[string]string {
	words := strings.Fields(props["LogExtraFields"])
	words = slices.DeleteFunc(words, func(w string) bool { return strings.HasPrefix(w, "UNITRUN_RUN=") })
	props = maps.Clone(props)
	props["LogExtraFields"] = strings.Join(words, " ")
	return props
}

// TestRefusedStartLeavesNoUnit: a unit whose start systemd refuses (here
// for RefuseManualStart=yes) is not left loaded by unitrun, which took a
// reference on it (AddRef=yes): its name is free for the next command.
func TestRefusedStartLeavesNoUnit(t *testing.T) {
	conn := systemdtest.Conn(t)
	c := job.Command(conn, "/bin/true")
	c.Name = "unitrun-refused.service"
	c.Properties = []unit.Property{{Name: "RefuseManualStart", Value: dbus.MakeVariant(true)}}
	if err := c.Run(); err == nil {
		t.Fatal("a unit with RefuseManualStart=yes was started")
	}
	again := job.Command(conn, "/bin/true")
	again.Name = c.Name
	if err := again.Run(); err != nil {
		t.Fatalf("the same name again: %v", err)
	}
}
