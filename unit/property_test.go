package unit

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
)

// propertyTests are checked here and against what systemd-run itself sends
// (oracle_test.go). stricter marks assignments systemd-run accepts but
// ParseProperty refuses: values the manager would refuse, and the settings
// ParseProperty does not support.
var propertyTests = []struct {
	in       string
	name     string
	value    any
	err      string
	stricter bool
}{
	// booleans
	{in: "RemainAfterExit=yes", name: "RemainAfterExit", value: true},
	{in: "PrivateTmp=on", name: "PrivateTmp", value: true},
	{in: "PrivateNetwork=0", name: "PrivateNetwork", value: false},
	{in: "NoNewPrivileges=TRUE", name: "NoNewPrivileges", value: true},
	{in: "MemoryAccounting=off", name: "MemoryAccounting", value: false},
	{in: "SendSIGKILL=n", name: "SendSIGKILL", value: false},
	{in: "DynamicUser=t", name: "DynamicUser", value: true},
	{in: "StopWhenUnneeded=yes", name: "StopWhenUnneeded", value: true},
	{in: "PrivateTmp=maybe", err: `property "PrivateTmp": "maybe" is not a boolean (want yes/no, true/false, on/off, 1/0)`},
	{in: "PrivateTmp=", err: "is not a boolean"},
	{in: "PrivateTmp= yes", err: "is not a boolean"},
	{in: "Delegate=yes", name: "Delegate", value: true},
	{in: "Delegate=cpu memory", name: "DelegateControllers", value: []string{"cpu", "memory"}},

	// time spans
	{in: "RuntimeMaxSec=5", name: "RuntimeMaxUSec", value: uint64(5e6)},
	{in: "RuntimeMaxSec=1min 30s", name: "RuntimeMaxUSec", value: uint64(90e6)},
	{in: "TimeoutStopSec=250ms", name: "TimeoutStopUSec", value: uint64(250e3)},
	{in: "TimeoutStartSec=infinity", name: "TimeoutStartUSec", value: uint64(math.MaxUint64)},
	{in: "RestartSec=2h", name: "RestartUSec", value: uint64(7200e6)},
	{in: "RuntimeRandomizedExtraSec=1.5s", name: "RuntimeRandomizedExtraUSec", value: uint64(1.5e6)},
	{in: "WatchdogSec=0", name: "WatchdogUSec", value: uint64(0)},
	{in: "StartLimitIntervalSec=10s", name: "StartLimitIntervalUSec", value: uint64(10e6)},
	{in: "CPUQuotaPeriodSec=", name: "CPUQuotaPeriodUSec", value: uint64(math.MaxUint64)},
	{in: "CPUQuotaPeriodSec=10ms", name: "CPUQuotaPeriodUSec", value: uint64(10e3)},
	{in: "RuntimeMaxSec=", err: `property "RuntimeMaxSec": value "": not a time span`},
	{in: "RuntimeMaxSec=5 parsecs", err: "not a time span"},
	{in: "RuntimeMaxSec=-1", err: `value "-1": out of range`},

	// sizes and counts
	{in: "MemoryMax=1G", name: "MemoryMax", value: uint64(1 << 30)},
	{in: "MemoryMax=512M", name: "MemoryMax", value: uint64(512 << 20)},
	{in: "MemoryHigh=100K", name: "MemoryHigh", value: uint64(100 << 10)},
	{in: "MemoryLow=4096", name: "MemoryLow", value: uint64(4096)},
	{in: "MemoryMin=1.5G", name: "MemoryMin", value: uint64(3 << 29)},
	{in: "MemorySwapMax=infinity", name: "MemorySwapMax", value: uint64(math.MaxUint64)},
	{in: "MemoryMax=", name: "MemoryMax", value: uint64(math.MaxUint64)},
	{in: "MemoryLow=", name: "MemoryLow", value: uint64(0)},
	{in: "MemoryMax=50%", name: "MemoryMaxScale", value: uint32(2147483648)},
	{in: "MemoryMax=33.33%", name: "MemoryMaxScale", value: uint32(1431512599)},
	{in: "MemoryMax=100%", name: "MemoryMaxScale", value: uint32(math.MaxUint32)},
	{in: "MemoryMax=0%", name: "MemoryMaxScale", value: uint32(0)},
	{in: "MemoryMax=150%", err: `"150%" is not a size (such as 4096, 100K, 512M, 1.5G), a percentage up to 100% or infinity`},
	{in: "MemoryMax=1X", err: "is not a size"},
	{in: "MemoryMax=-1", err: "is not a size"},
	{in: "TasksMax=100", name: "TasksMax", value: uint64(100)},
	{in: "TasksMax=infinity", name: "TasksMax", value: uint64(math.MaxUint64)},
	{in: "TasksMax=10%", name: "TasksMaxScale", value: uint32(429496730)},
	{in: "TasksMax=0x10", name: "TasksMax", value: uint64(16)},
	{in: "TasksMax=1K", err: `"1K" is not a count, a percentage up to 100% or infinity`},

	// CPU and I/O
	{in: "CPUQuota=50%", name: "CPUQuotaPerSecUSec", value: uint64(500000)},
	{in: "CPUQuota=150%", name: "CPUQuotaPerSecUSec", value: uint64(1500000)},
	{in: "CPUQuota=12.5%", name: "CPUQuotaPerSecUSec", value: uint64(125000)},
	{in: "CPUQuota=5‰", name: "CPUQuotaPerSecUSec", value: uint64(5000)},
	{in: "CPUQuota=", name: "CPUQuotaPerSecUSec", value: uint64(math.MaxUint64)},
	{in: "CPUQuota=0%", err: `property "CPUQuota": 0% is too small`},
	{in: "CPUQuota=50", err: `"50" is not a percentage`},
	{in: "CPUWeight=100", name: "CPUWeight", value: uint64(100)},
	{in: "CPUWeight=idle", name: "CPUWeight", value: uint64(0)},
	{in: "StartupCPUWeight=10000", name: "StartupCPUWeight", value: uint64(10000)},
	{in: "IOWeight=1", name: "IOWeight", value: uint64(1)},
	{in: "IOWeight=", name: "IOWeight", value: uint64(math.MaxUint64)},
	{in: "CPUWeight=0", err: `"0" is not a weight in 1..10000`},
	{in: "CPUWeight=10001", err: "is not a weight"},
	{in: "IOWeight=idle", err: "is not a weight"},

	// integers and signals
	{in: "Nice=-20", name: "Nice", value: int32(-20)},
	{in: "Nice=19", name: "Nice", value: int32(19)},
	{in: "Nice=010", name: "Nice", value: int32(8)},
	{in: "Nice=20", err: `"20" is not a nice level in -20..19`},
	{in: "Nice=x", err: "is not a nice level"},
	{in: "OOMScoreAdjust=-1000", name: "OOMScoreAdjust", value: int32(-1000)},
	{in: "OOMScoreAdjust=1001", err: "is not an OOM score adjustment in -1000..1000", stricter: true},
	{in: "KillSignal=SIGTERM", name: "KillSignal", value: int32(15)},
	{in: "KillSignal=KILL", name: "KillSignal", value: int32(9)},
	{in: "KillSignal=9", name: "KillSignal", value: int32(9)},
	{in: "KillSignal=SIGRTMIN+3", name: "KillSignal", value: int32(37)},
	{in: "FinalKillSignal=RTMAX-1", name: "FinalKillSignal", value: int32(63)},
	{in: "KillSignal=SIGFOO", err: `"SIGFOO" is not a signal`},
	{in: "KillSignal=0", err: "is not a signal"},
	{in: "SuccessActionExitStatus=7", name: "SuccessActionExitStatus", value: int32(7)},
	{in: "FailureActionExitStatus=", name: "FailureActionExitStatus", value: int32(-1)},
	{in: "SuccessActionExitStatus=256", err: "is not an exit status in 0..255"},
	{in: "StartLimitBurst=5", name: "StartLimitBurst", value: uint32(5)},
	{in: "UMask=0022", name: "UMask", value: uint32(0o22)},
	{in: "UMask=+22", err: "is not an octal mode"},
	{in: "UMask=8", err: "is not an octal mode"},

	// strings and enumerations
	{in: "Description=My job: 100% \"done\"", name: "Description", value: `My job: 100% "done"`},
	{in: "Description=", name: "Description", value: ""},
	{in: "User=nobody", name: "User", value: "nobody"},
	{in: "Group=1000", name: "Group", value: "1000"},
	{in: "SyslogIdentifier=mco", name: "SyslogIdentifier", value: "mco"},
	{in: "UtmpIdentifier=x", name: "UtmpIdentifier", value: "x"},
	{in: "WorkingDirectory=/var/lib/x", name: "WorkingDirectory", value: "/var/lib/x"},
	{in: "WorkingDirectory=~", name: "WorkingDirectory", value: "~"},
	{in: "WorkingDirectory=-/maybe", name: "WorkingDirectory", value: "-/maybe"},
	{in: "WorkingDirectory=relative", err: `"relative" is not an absolute path or '~'`, stricter: true},
	{in: "RootDirectory=/srv/root", name: "RootDirectory", value: "/srv/root"},
	{in: "RootDirectory=rel", err: `"rel" is not an absolute path`, stricter: true},
	{in: "EnvironmentFile=relative", err: `"relative" is not an absolute path (optionally after '-')`, stricter: true},
	{in: "EnvironmentFile=-rel", err: `"-rel" is not an absolute path`, stricter: true},
	{in: "StandardOutput=file:rel", err: `"file:rel": "rel" is not an absolute path`, stricter: true},
	{in: "StandardError=append:rel", err: `"append:rel": "rel" is not an absolute path`, stricter: true},
	{in: "LogsDirectory=/abs", err: `"/abs" must be a path relative to the manager's directory for LogsDirectory, with no ".." in it`, stricter: true},
	{in: "StateDirectory=a/../../etc", err: `with no ".." in it`, stricter: true},
	{in: "Slice=unitrun.slice", name: "Slice", value: "unitrun.slice"},
	{in: "Slice=unitrun", err: `unit name "unitrun": no type suffix`, stricter: true},
	{in: "Slice=unitrun.service", err: "is not a slice name", stricter: true},
	{in: "Type=exec", name: "Type", value: "exec"},
	{in: "Type=notify", name: "Type", value: "notify"},
	{in: "Type=notify-reload", err: `"notify-reload" is not one of simple, exec, forking, oneshot, dbus, notify, idle`, stricter: true},
	{in: "Restart=on-failure", name: "Restart", value: "on-failure"},
	{in: "Restart=sometimes", err: "is not one of no, on-success", stricter: true},
	{in: "KillMode=mixed", name: "KillMode", value: "mixed"},
	{in: "KillMode=all", err: "is not one of control-group, process, mixed, none", stricter: true},
	{in: "CollectMode=inactive-or-failed", name: "CollectMode", value: "inactive-or-failed"},
	{in: "CollectMode=failed", err: "is not one of inactive, inactive-or-failed", stricter: true},
	{in: "OOMPolicy=kill", name: "OOMPolicy", value: "kill"},
	{in: "ExitType=cgroup", name: "ExitType", value: "cgroup"},
	{in: "NotifyAccess=all", name: "NotifyAccess", value: "all"},
	{in: "ProtectSystem=strict", name: "ProtectSystem", value: "strict"},
	{in: "ProtectSystem=yes", name: "ProtectSystem", value: "yes"},
	{in: "ProtectSystem=read-only", err: `"read-only" is neither a boolean nor one of full, strict`, stricter: true},
	{in: "ProtectHome=read-only", name: "ProtectHome", value: "read-only"},
	{in: "ProtectHome=tmpfs", name: "ProtectHome", value: "tmpfs"},
	{in: "ProtectHome=off", name: "ProtectHome", value: "off"},
	{in: "StandardOutput=journal", name: "StandardOutput", value: "journal"},
	{in: "StandardError=null", name: "StandardError", value: "null"},
	{in: "StandardOutput=fd:out", name: "StandardOutputFileDescriptorName", value: "out"},
	{in: "StandardOutput=file:/tmp/x", name: "StandardOutputFile", value: "/tmp/x"},
	{in: "StandardError=append:/tmp/x", name: "StandardErrorFileToAppend", value: "/tmp/x"},
	{in: "StandardOutput=truncate:/tmp/x", name: "StandardOutputFileToTruncate", value: "/tmp/x"},
	{in: "StandardOutput=printer", err: "is not one of inherit, null, tty, journal", stricter: true},

	// lists
	{in: "After=a.service b.target", name: "After", value: []string{"a.service", "b.target"}},
	{in: `Wants="a.service"  'getty@tty1.service'`, name: "Wants", value: []string{"a.service", "getty@tty1.service"}},
	{in: "Before=", name: "Before", value: []string{}},
	{in: "Requires=x.service", name: "Requires", value: []string{"x.service"}},
	{in: "BindsTo=x.service", name: "BindsTo", value: []string{"x.service"}},
	{in: "PartOf=x.service", name: "PartOf", value: []string{"x.service"}},
	{in: "Conflicts=halt.target poweroff.target", name: "Conflicts", value: []string{"halt.target", "poweroff.target"}},
	{in: `After=dev-sda\x2d1.device`, name: "After", value: []string{"dev-sdax2d1.device"}},
	{in: "After=a", err: `unit name "a": no type suffix`, stricter: true},
	{in: "After=getty@.service", err: `unit name "getty@.service": a template, not a unit`, stricter: true},
	{in: `After="a.service`, err: `property "After": "\"a.service": unbalanced " quote`},
	{in: `After=a.service\`, err: "trailing backslash"},
	{in: "Environment=A=1 B=2", name: "Environment", value: []string{"A=1", "B=2"}},
	{in: `Environment="A=two words" 'B=x"y'`, name: "Environment", value: []string{"A=two words", `B=x"y`}},
	{in: `Environment="NL=a\nb" TAB=\t X=\x41`, name: "Environment", value: []string{"NL=a\nb", "TAB=\t", "X=A"}},
	{in: "Environment=HOME=%h PATH=$PATH", name: "Environment", value: []string{"HOME=%h", "PATH=$PATH"}},
	{in: "Environment=", name: "Environment", value: []string{}},
	{in: "Environment=1A=b", err: `environment variable name "1A": must match [A-Za-z_][A-Za-z0-9_]*`, stricter: true},
	{in: "Environment=NOEQUALS", err: `"NOEQUALS" is not an assignment NAME=VALUE`, stricter: true},
	{in: `Environment=A=\xff`, err: "environment variable A: value is not valid UTF-8"},
	{in: `Environment=A=\q`, err: "bad escape sequence"},
	{in: "PassEnvironment=HOME PATH", name: "PassEnvironment", value: []string{"HOME", "PATH"}},
	{in: "PassEnvironment=A=1", err: `environment variable name "A=1"`, stricter: true},
	{in: "UnsetEnvironment=HOME A=1", name: "UnsetEnvironment", value: []string{"HOME", "A=1"}},
	{in: "SupplementaryGroups=wheel 'my group'", name: "SupplementaryGroups", value: []string{"wheel", "my group"}},
	{in: "ReadWritePaths=/var/lib/x -/maybe +/root -+/both", name: "ReadWritePaths", value: []string{"/var/lib/x", "-/maybe", "+/root", "-+/both"}},
	{in: `ReadOnlyPaths="/with space"`, name: "ReadOnlyPaths", value: []string{"/with space"}},
	{in: "InaccessiblePaths=/home", name: "InaccessiblePaths", value: []string{"/home"}},
	{in: "ReadWritePaths=relative", err: `path "relative" is not absolute`, stricter: true},

	// names
	{in: "Foo=bar", err: `property "Foo": unknown`},
	{in: "memorymax=1G", err: `property "memorymax": unknown (did you mean "MemoryMax"?)`},
	{in: "MemroyMax=1G", err: `property "MemroyMax": unknown (did you mean "MemoryMax"?)`},
	{in: "EnvironmentFiles=/x", err: `property "EnvironmentFiles": unknown (did you mean "EnvironmentFile"?)`},
	{in: "ExecStart=/bin/true", err: "not supported by unitrun (pass the command line as argv)", stricter: true},
	{in: "Description=\xff", err: `property "Description": not valid UTF-8 (D-Bus strings must be)`},
	{in: "After=\xff.service", err: "not valid UTF-8"},
	{in: "PrivateTmp", err: `property assignment "PrivateTmp": missing '='`},
	{in: "=yes", err: `property "": unknown`},
	{in: "Description=a\x00b", err: `property "Description": value contains a NUL byte`},
}

func TestParseProperty(t *testing.T) {
	for _, tt := range propertyTests {
		p, err := ParseProperty(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseProperty(%q) = %v, %v, want an error containing %q", tt.in, p, err, tt.err)
			}
			continue
		}
		want := []Property{{Name: tt.name, Value: dbus.MakeVariant(tt.value)}}
		if err != nil || !reflect.DeepEqual(p, want) {
			t.Errorf("ParseProperty(%q) = %v, %v, want %v", tt.in, p, err, want)
		}
	}
}

func TestKnownProperties(t *testing.T) {
	names := KnownProperties()
	if !slices.IsSorted(names) {
		t.Error("KnownProperties is not sorted")
	}
	for _, want := range strings.Fields(`RemainAfterExit PrivateTmp PrivateDevices PrivateNetwork
		NoNewPrivileges Delegate MemoryAccounting CPUAccounting TasksAccounting IgnoreSIGPIPE
		SendSIGKILL DynamicUser RuntimeMaxSec TimeoutStopSec TimeoutStartSec RestartSec
		RuntimeRandomizedExtraSec WatchdogSec MemoryMax MemoryHigh MemoryLow MemoryMin
		MemorySwapMax CPUWeight StartupCPUWeight IOWeight CPUQuota TasksMax Nice OOMScoreAdjust
		User Group WorkingDirectory Description Slice KillMode Type Restart StandardOutput
		StandardError SyslogIdentifier CollectMode KillSignal ProtectSystem ProtectHome
		UtmpIdentifier After Before Requires Wants BindsTo PartOf Conflicts Environment
		SupplementaryGroups ReadWritePaths ReadOnlyPaths InaccessiblePaths`) {
		if !slices.Contains(names, want) {
			t.Errorf("KnownProperties lacks %s", want)
		}
	}
	for _, name := range names {
		if _, err := ParseProperty(name + "=x"); err != nil && strings.Contains(err.Error(), "unknown") {
			t.Errorf("ParseProperty(%s=x): %v", name, err)
		}
	}
}

func TestExec(t *testing.T) {
	p := Exec("ExecStopPost", "/bin/sh", []string{"sh", "-c", "echo $$"})
	if p.Name != "ExecStopPost" {
		t.Errorf("name %q", p.Name)
	}
	// The signature systemd's D-Bus API takes for every Exec*= property.
	if sig := p.Value.Signature().String(); sig != "a(sasb)" {
		t.Errorf("signature %s, want a(sasb)", sig)
	}
	want := []ExecCommand{{Path: "/bin/sh", Args: []string{"sh", "-c", "echo $$"}}}
	if got, ok := p.Value.Value().([]ExecCommand); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("value %#v, want %#v", p.Value.Value(), want)
	}
}
