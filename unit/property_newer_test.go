package unit

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// newerReleases are the settings that systemd-run's table for a service
// gained in each release after 252, each with the function that systemd
// 261's table converts it with (without its "bus_append_" prefix). They
// were read from src/shared/bus-unit-util.c at the tags v252 to v261 of
// systemd's repository: up to v257 the names that
// bus_append_{cgroup,execute,kill,service,unit}_property compare field
// with (STR_IN_SET, streq), from v258 the entries of the tables
// cgroup_properties, execute_properties, kill_properties,
// service_properties and unit_properties; each release's set less the
// one before. (ReloadSignal moved from the kill table to the service
// table in 259; the Limit*= settings moved to a "try" helper in 258.)
// Nothing was removed from those tables in these releases.
var newerReleases = map[int]string{
	253: "LogFilterPatterns:log_filter_patterns MemoryZSwapMax:parse_resource_limit OpenFile:open_file ReloadSignal:signal_from_string",
	254: `DelegateSubgroup:string ExtensionImagePolicy:string FileDescriptorStorePreserve:string
		ImportCredential:import_credential MemoryKSM:parse_boolean MemoryPressureThresholdSec:parse_sec_rename
		MemoryPressureWatch:string MountImagePolicy:string RestartMaxDelaySec:parse_sec_rename RestartMode:string
		RestartSteps:safe_atou RootEphemeral:parse_boolean RootImagePolicy:string`,
	255: "CoredumpReceive:parse_boolean NFTSet:nft_set SetLoginEnvironment:parse_boolean SurviveFinalKillSignal:parse_boolean",
	256: "MemoryZSwapWriteback:parse_boolean WantsMountsFor:strv",
	257: `BindLogSockets:parse_boolean ImportCredentialEx:import_credential
		ManagedOOMMemoryPressureDurationSec:parse_sec_rename_infinity PrivatePIDs:string
		PrivateTmpEx:boolean_or_ex_string PrivateUsersEx:boolean_or_ex_string ProtectControlGroupsEx:boolean_or_ex_string`,
	258: `BPFDelegateAttachments:string BPFDelegateCommands:string BPFDelegateMaps:string BPFDelegatePrograms:string
		CacheDirectoryAccounting:parse_boolean CacheDirectoryQuota:quota_directory DelegateNamespaces:namespace_list
		LogsDirectoryAccounting:parse_boolean LogsDirectoryQuota:quota_directory PrivateBPF:string
		ProtectHostnameEx:protect_hostname StateDirectoryAccounting:parse_boolean StateDirectoryQuota:quota_directory`,
	259: "ExecReloadPost:exec_command ExecReloadPostEx:exec_command UserNamespacePath:string",
	260: "BindNetworkInterface:string MemoryTHP:string RefreshOnReload:refresh_on_reload RootMStack:string",
	261: `CPUPressureThresholdSec:parse_sec_rename CPUPressureWatch:string CPUSetPartition:string
		IOPressureThresholdSec:parse_sec_rename IOPressureWatch:string OOMRules:strv`,
}

// newerConditions are the kinds of Condition*= and Assert*= that
// condition_type_table and assert_type_table of src/shared/condition.c
// gained after 252, by release (ConditionKernelVersion= stays an alias of
// ConditionVersion=).
var newerConditions = map[int]string{
	258: "KernelModuleLoaded Version",
	260: "PathIsSocket",
	261: "Fraction MachineTag",
}

// converterSamples are, for each converter of systemd's table, a value it
// takes and the D-Bus signature of what it sends, and whether it sends
// the property under the name with "Sec" made "USec".
var converterSamples = map[string]struct {
	value, signature string
	usec             bool
}{
	"string":                    {"x", "s", false},
	"parse_boolean":             {"yes", "b", false},
	"parse_sec_rename":          {"1min", "t", true},
	"parse_sec_rename_infinity": {"", "t", true},
	"safe_atou":                 {"3", "u", false},
	"strv":                      {"/a /b", "as", false},
	"signal_from_string":        {"SIGHUP", "i", false},
	"parse_resource_limit":      {"1G", "t", false},
	"exec_command":              {"/bin/true", "a(sasb)", false},
	"log_filter_patterns":       {"~debug", "a(bs)", false},
	"open_file":                 {"/etc/hosts", "a(sst)", false},
	"import_credential":         {"cred.*", "as", false},
	"nft_set":                   {"cgroup:inet:filter:x", "a(iiss)", false},
	"boolean_or_ex_string":      {"yes", "b", false},
	"quota_directory":           {"10%", "(tus)", false},
	"namespace_list":            {"net ipc", "t", false},
	"protect_hostname":          {"private", "(ss)", false},
	"refresh_on_reload":         {"a b", "a(bs)", false},
}

// newerProperties holds what systemd's sources say: each setting that a
// release after 252 added, with that release, and for each a value that
// the converter of systemd's table takes, sent with the same D-Bus type.
func TestNewerProperties(t *testing.T) {
	want := map[string]int{}
	for v, s := range newerReleases {
		for _, f := range strings.Fields(s) {
			name, conv, _ := strings.Cut(f, ":")
			want[name] = v
			sample, ok := converterSamples[conv]
			if !ok {
				t.Fatalf("%s: no sample for converter %s", name, conv)
			}
			ps, err := ParseProperty(name + "=" + sample.value)
			if err != nil || len(ps) != 1 {
				t.Errorf("ParseProperty(%s=%s) = %v, %v; want one property", name, sample.value, ps, err)
				continue
			}
			sig := sample.signature
			if strings.HasSuffix(name, "Ex") && conv == "exec_command" {
				sig = "a(sasas)"
			}
			wantName := name
			if sample.usec {
				wantName = strings.TrimSuffix(name, "Sec") + "USec"
			}
			switch conv {
			case "boolean_or_ex_string":
				wantName = strings.TrimSuffix(name, "Ex")
			case "import_credential":
				wantName = "ImportCredential" // ImportCredentialEx for GLOB:NAME
			}
			if p := ps[0]; p.Name != wantName || p.Value.Signature().String() != sig || p.Since != v || p.Setting != name {
				t.Errorf("ParseProperty(%s=%s) = %s %s (since %d, setting %q); want %s %s since %d",
					name, sample.value, p.Name, p.Value.Signature(), p.Since, p.Setting, wantName, sig, v)
			}
		}
	}
	for v, s := range newerConditions {
		for _, kind := range strings.Fields(s) {
			want["Condition"+kind], want["Assert"+kind] = v, v
		}
	}
	got := map[string]int{}
	for _, p := range newerProperties {
		got[p.name] = p.since
		if _, ok := parsers()[p.name]; ok {
			t.Errorf("%s is in both tables", p.name)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("newerProperties = %v,\nsystemd's sources say %v", got, want)
	}
	if !slices.IsSortedFunc(newerProperties, func(a, b newerProperty) int { return strings.Compare(a.name, b.name) }) {
		t.Error("newerProperties is not sorted by name")
	}
	for name, v := range want {
		if PropertySince(name) != v || !slices.Contains(KnownProperties(), name) {
			t.Errorf("PropertySince(%s) = %d, want %d, and KnownProperties to list it", name, PropertySince(name), v)
		}
	}
	if PropertySince("MemoryMax") != Oldest || PropertySince("MemoryMaxx") != 0 {
		t.Errorf("PropertySince(MemoryMax), (MemoryMaxx) = %d, %d; want %d, 0", PropertySince("MemoryMax"), PropertySince("MemoryMaxx"), Oldest)
	}
}

// The newer settings' values, parsed as systemd 261's systemd-run does.
func TestParseNewerProperty(t *testing.T) {
	for _, tt := range []struct {
		in    string
		name  string
		value any
		err   string
	}{
		{in: "RestartSteps=3", name: "RestartSteps", value: uint32(3)},
		{in: "RestartSteps=-1", err: `property "RestartSteps": "-1" is not`},
		{in: "RestartMaxDelaySec=1min", name: "RestartMaxDelayUSec", value: uint64(60e6)},
		{in: "RestartMode=direct", name: "RestartMode", value: "direct"},
		{in: "ManagedOOMMemoryPressureDurationSec=", name: "ManagedOOMMemoryPressureDurationUSec", value: uint64(math.MaxUint64)},
		{in: "MemoryZSwapMax=50%", name: "MemoryZSwapMaxScale", value: uint32(math.MaxUint32/2 + 1)},
		{in: "ReloadSignal=SIGUSR1", name: "ReloadSignal", value: int32(unix.SIGUSR1)},
		{in: "LogFilterPatterns=~debug", name: "LogFilterPatterns", value: []boolString{{false, "debug"}}},
		{in: "LogFilterPatterns=err", name: "LogFilterPatterns", value: []boolString{{true, "err"}}},
		{in: "LogFilterPatterns=", name: "LogFilterPatterns", value: []boolString{}},
		{in: "ImportCredential=a.*", name: "ImportCredential", value: []string{"a.*"}},
		{in: "ImportCredential=a.*:b", name: "ImportCredentialEx", value: []stringPair{{"a.*", "b"}}},
		{in: "ImportCredential=", name: "ImportCredential", value: []string{}},
		{in: "PrivateTmpEx=no", name: "PrivateTmp", value: false},
		{in: "PrivateTmpEx=disconnected", name: "PrivateTmpEx", value: "disconnected"},
		{in: "ProtectHostnameEx=private:box", name: "ProtectHostnameEx", value: stringPair{"private", "box"}},
		{in: "ProtectHostnameEx=true", name: "ProtectHostname", value: true},
		{in: "ProtectHostnameEx=private:", err: "the hostname after ':' is empty"},
		{in: "StateDirectoryQuota=1G", name: "StateDirectoryQuota", value: quota{1 << 30, math.MaxUint32, "yes"}},
		{in: "StateDirectoryQuota=off", name: "StateDirectoryQuota", value: quota{math.MaxUint64, math.MaxUint32, "no"}},
		{in: "StateDirectoryQuota=lots", err: "is not a size"},
		{in: "StateDirectoryQuota=150%", err: "a percentage up to 100% or off"},
		{in: "StateDirectoryQuota=100%", name: "StateDirectoryQuota", value: quota{math.MaxUint64, math.MaxUint32, "yes"}},
		{in: "DelegateNamespaces=yes", name: "DelegateNamespaces", value: uint64(unix.CLONE_NEWCGROUP | unix.CLONE_NEWIPC |
			unix.CLONE_NEWNET | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWUTS | unix.CLONE_NEWTIME)},
		{in: "DelegateNamespaces=~net ipc cgroup mnt pid uts", name: "DelegateNamespaces", value: uint64(unix.CLONE_NEWTIME)},
		{in: "DelegateNamespaces=disk", err: `"disk" is not a namespace`},
		{in: "OpenFile=/etc/hosts", name: "OpenFile", value: []openFile{{"/etc/hosts", "hosts", 0}}},
		{in: "OpenFile=/etc/hosts:h:read-only,graceful", name: "OpenFile", value: []openFile{{"/etc/hosts", "h", 9}}},
		{in: "OpenFile=/etc/hosts::append", name: "OpenFile", value: []openFile{{"/etc/hosts", "hosts", 2}}},
		{in: "OpenFile=/etc/hosts:h:read-only,append", err: "at most one of read-only, append and truncate"},
		{in: "OpenFile=/etc/hosts:h:ro", err: `"ro" is not an option`},
		{in: "OpenFile=hosts", err: `"hosts" is not an absolute path`},
		{in: "OpenFile=/a:b:read-only:x", err: "is not PATH[:NAME[:OPTIONS]]"},
		{in: "NFTSet=cgroup:inet:filter:a user:ip6:t:b", name: "NFTSet", value: []nftSet{{3, 1, "filter", "a"}, {4, 10, "t", "b"}}},
		{in: "NFTSet=address:inet:filter:a", err: `source "address" is not cgroup, user or group`},
		{in: "NFTSet=cgroup:inet:1filter:a", err: "is not a table or set name"},
		{in: "NFTSet=cgroup:inet:filter", err: "is not SOURCE:FAMILY:TABLE:SET"},
		{in: "RefreshOnReload=~a b", name: "RefreshOnReload", value: []boolString{{true, "a"}, {true, "b"}}},
		{in: "ExecReloadPost=-/bin/true x", name: "ExecReloadPost", value: []ExecCommand{{"/bin/true", []string{"/bin/true", "x"}, true}}},
		{in: "WantsMountsFor=/srv /var", name: "WantsMountsFor", value: []string{"/srv", "/var"}},
		{in: "ConditionVersion=>=258", name: "Conditions", value: []condition{{"ConditionVersion", false, false, ">=258"}}},
		{in: "AssertPathIsSocket=|!/run/x", name: "Asserts", value: []condition{{"AssertPathIsSocket", true, true, "/run/x"}}},
	} {
		ps, err := ParseProperty(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseProperty(%q) = %v, %v; want an error containing %q", tt.in, ps, err, tt.err)
			}
			continue
		}
		key, _, _ := strings.Cut(tt.in, "=")
		want := []Property{{Name: tt.name, Value: dbus.MakeVariant(tt.value), Since: PropertySince(key), Setting: key}}
		if err != nil || !reflect.DeepEqual(ps, want) {
			t.Errorf("ParseProperty(%q) = %v, %v; want %v", tt.in, ps, err, want)
		}
	}
}

// A setting newer than the manager's systemd is refused naming both
// versions; the manager's Version string is read up to its first
// non-digit, and one that does not start with a number refuses nothing.
func TestCheckVersion(t *testing.T) {
	steps, err := ParseProperty("RestartSteps=3")
	if err != nil {
		t.Fatal(err)
	}
	oldOnes, err := ParseProperty("MemoryMax=1G")
	if err != nil {
		t.Fatal(err)
	}
	if NeedsVersion(oldOnes) || !NeedsVersion(append(oldOnes, steps...)) {
		t.Error("NeedsVersion: want false for MemoryMax alone, true with RestartSteps")
	}
	for _, tt := range []struct{ version, err string }{
		{"252.38-1~deb12u1", "RestartSteps= needs systemd 254; this manager is 252"},
		{"253", "RestartSteps= needs systemd 254; this manager is 253"},
		{"254", ""},
		{"257.9-1.fc42", ""},
		{"v261", ""},
		{"", ""},
		{"unknown", ""},
	} {
		err := CheckVersion(append(oldOnes, steps...), tt.version)
		var ve *VersionError
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("CheckVersion(RestartSteps, %q) = %v, want nil", tt.version, err)
		case tt.err != "" && (err == nil || err.Error() != tt.err || !errors.As(err, &ve) || ve.Setting != "RestartSteps"):
			t.Errorf("CheckVersion(RestartSteps, %q) = %v, want %q", tt.version, err, tt.err)
		}
	}
	for s, want := range map[string]int{"252": 252, "252.38-1~deb12u1": 252, "258~rc1": 258, "v259": 259, "261.2": 261} {
		if v, ok := ParseVersion(s); !ok || v != want {
			t.Errorf("ParseVersion(%q) = %d, %v; want %d", s, v, ok, want)
		}
	}
	if _, ok := ParseVersion("systemd"); ok {
		t.Error(`ParseVersion("systemd") read a number`)
	}
}
