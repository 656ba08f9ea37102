package unit

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"
)

// A Property is one property of a transient unit, as passed to the
// manager's StartTransientUnit method.
type Property struct {
	Name  string
	Value dbus.Variant
	// Since is the first systemd version that takes the property, set by
	// ParseProperty where that is newer than Oldest, and Setting the
	// setting it parsed: a job.Cmd refuses the property on an older
	// manager (see CheckVersion). Neither is sent to the manager.
	Since   int    `dbus:"-"`
	Setting string `dbus:"-"`
}

// ExecCommand is one command of an Exec*= property (ExecStart=,
// ExecStop=, ExecStopPost=, ...) as systemd's D-Bus API takes it, of
// signature (sasb): the path of the executable, the whole argv (argv[0]
// included) and whether an unclean exit counts as a failure.
type ExecCommand struct {
	Path             string
	Args             []string
	UncleanIsFailure bool
}

// Exec returns the property name (such as "ExecStart") holding the one
// command that runs the executable at path with argv. The words are sent
// as they are: systemd 252 still expands "$VAR", "${VAR}" and "$$" in
// them when the command runs.
func Exec(name, path string, argv []string) Property {
	return prop(name, []ExecCommand{{Path: path, Args: argv}})
}

// ParseProperty parses the assignment "Key=Value" into the properties that
// "systemd-run -p Key=Value" sends for a service, with the same D-Bus
// names, types and values (systemd 252's bus-unit-util.c): most settings
// send one property, some none (an empty StateDirectory=) or two
// (LimitNOFILE= sends LimitNOFILE and LimitNOFILESoft, TimeoutSec= the
// start and stop timeouts). Key is a unit-file setting name of a service;
// KnownProperties lists them. The settings systemd added after 252, up to
// 261, are parsed as systemd-run 261 parses them, and their properties
// carry the release that added them (Property.Since), for CheckVersion.
//
// Values are parsed as systemd-run parses them, for example:
//
//   - booleans (PrivateTmp, RemainAfterExit, ...): 1, yes, y, true, t, on
//     or 0, no, n, false, f, off, in any case.
//   - time spans (RuntimeMaxSec, TimeoutStopSec, ...): as in ParseTimeSpan,
//     sent in microseconds under the name with "Sec" replaced by "USec";
//     "infinity" is Infinity.
//   - memory limits and TasksMax: a size as in ParseSize, "infinity", or a
//     percentage sent as the property NAMEScale (100% is 2^32-1).
//   - resource limits (LimitNOFILE, LimitCORE, ... every Limit*=): one value
//     or SOFT:HARD, each a count, a size (1K, 1M for the byte limits), a
//     time span (LimitCPU in seconds, LimitRTTIME in microseconds), a nice
//     level (LimitNICE: +19..-20, or 0..40 raw) or "infinity".
//   - EnvironmentFile: a path, with a leading '-' if a missing file is no
//     error, sent as the list EnvironmentFiles.
//   - Exec*= commands other than ExecStart (ExecStartPre, ExecStopPost,
//     ...), with the prefixes '-', '@', ':', '+', '!' and '!!'.
//   - signals, exit statuses, capabilities, CPU sets, IP prefixes,
//     conditions and asserts, credentials, bind mounts and the rest of
//     systemd's table, each in its own D-Bus type.
//   - lists (After, Environment, ReadWritePaths, ...): words split at white
//     space, with quotes removed (and C escapes decoded for the environment
//     settings and command lines). An empty list resets the setting.
//     Repeating an assignment adds to the list; combining repeated
//     assignments is the caller's business.
//
// Numbers are read as systemd reads them, so "0x10" is 16 and "010" is 8.
// The assignment must be valid UTF-8, as D-Bus strings must be. For the
// enumerations (Type, Restart, KillMode, StandardInput, StandardOutput,
// ...), Slice, WorkingDirectory, OOMScoreAdjust, the dependencies, the
// environment settings and the path lists, ParseProperty also refuses at
// once what systemd-run would pass on and the manager refuse; so it does
// for the dependencies systemd does not create for a transient unit
// (WantedBy, RequiredBy, ...) and for ExecStart, whose command is argv.
// Other strings, such as User and Group, are passed on as given.
func ParseProperty(assignment string) ([]Property, error) {
	key, value, ok := strings.Cut(assignment, "=")
	if !ok {
		return nil, fmt.Errorf("property assignment %q: missing '='", assignment)
	}
	switch {
	case strings.IndexByte(assignment, 0) >= 0:
		return nil, fmt.Errorf("property %q: value contains a NUL byte", key)
	case !utf8.ValidString(assignment):
		return nil, fmt.Errorf("property %q: not valid UTF-8 (D-Bus strings must be)", key)
	}
	ps, err := parseSetting(key, value)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if !stringsValid(reflect.ValueOf(p.Value.Value())) {
			return nil, fmt.Errorf("property %q: an escape sequence makes a string that is not valid UTF-8 (D-Bus strings must be)", key)
		}
	}
	return ps, nil
}

// parseSetting parses the value of the setting key.
func parseSetting(key, value string) ([]Property, error) {
	if parse, ok := parsers()[key]; ok {
		ps, err := parse(key, value)
		if err != nil {
			return nil, fmt.Errorf("property %q: %v", key, err)
		}
		return ps, nil
	}
	n, ok := findNewer(key)
	if !ok {
		return nil, unknownProperty(key)
	}
	p, err := n.parse(key, value)
	if err != nil {
		return nil, fmt.Errorf("property %q: %v", key, err)
	}
	p.Since, p.Setting = n.since, key
	return []Property{p}, nil
}

// stringsValid reports whether every string in v is valid UTF-8 without
// NUL bytes, as D-Bus strings must be.
func stringsValid(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return utf8.ValidString(v.String()) && strings.IndexByte(v.String(), 0) < 0
	case reflect.Slice:
		for i := range v.Len() {
			if !stringsValid(v.Index(i)) {
				return false
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !stringsValid(v.Field(i)) {
				return false
			}
		}
	}
	return true
}

// KnownProperties returns the names of the settings ParseProperty parses,
// sorted: those of systemd 252 and the newer ones (PropertySince tells
// which version takes each).
func KnownProperties() []string {
	names := make([]string, 0, len(parsers())+len(newerProperties))
	for name := range parsers() {
		names = append(names, name)
	}
	for _, p := range newerProperties {
		names = append(names, p.name)
	}
	slices.Sort(names)
	return names
}

// ErrUnknownProperty is wrapped by the error of ParseProperty for a setting
// it does not know.
var ErrUnknownProperty = errors.New("unknown")

func unknownProperty(key string) error {
	if hint, ok := unparsed[key]; ok {
		return fmt.Errorf("property %q: not supported by unitrun (%s)", key, hint)
	}
	if near := nearestProperty(key); near != "" {
		return fmt.Errorf("property %q: %w (did you mean %q?)", key, ErrUnknownProperty, near)
	}
	return fmt.Errorf("property %q: %w", key, ErrUnknownProperty)
}

// nearestProperty returns the known name closest to key, ignoring case, if
// it is close enough to be a likely typo: at most a third of its letters
// differ.
func nearestProperty(key string) string {
	best, bestDist := "", len(key)/3+1
	for _, name := range KnownProperties() {
		if d := editDistance(strings.ToLower(key), strings.ToLower(name)); d < bestDist || d == 0 {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// unparsed explains settings systemd-run takes that ParseProperty does not.
var unparsed = map[string]string{
	"ExecStart":   "pass the command line as argv",
	"ExecStartEx": "pass the command line as argv",
}

func init() {
	// systemd-run sends these, and the manager refuses them: "Dependency
	// type ... may not be created transiently".
	for _, d := range strings.Fields(`RequiredBy RequisiteOf WantedBy BoundBy UpheldBy ConsistsOf ConflictedBy
		OnSuccessOf OnFailureOf Triggers TriggeredBy References ReferencedBy InSlice SliceOf`) {
		unparsed[d] = "systemd does not create this dependency for a transient unit"
	}
}

// A parser turns the value of a setting into the properties systemd-run
// sends for it.
type parser func(key, value string) ([]Property, error)

func prop(name string, v any) Property { return Property{Name: name, Value: dbus.MakeVariant(v)} }

// properties maps each setting to its parser; parsers fills it.
var properties = map[string]parser{}

// one makes a parser of a function that returns one property.
func one(f func(key, value string) (Property, error)) parser {
	return func(key, value string) ([]Property, error) {
		p, err := f(key, value)
		if err != nil {
			return nil, err
		}
		return []Property{p}, nil
	}
}

// The table follows bus_append_unit_property_assignment of systemd 252
// (src/shared/bus-unit-util.c) for a service: its cgroup, execute, kill,
// service and unit parts, in that order and with the same groups, one
// function each. Where ParseProperty checks a value more strictly than
// systemd-run, it is one that the manager refuses. The table is made at
// its first use, not in the init of every process that links unit (each
// unitrun process, a run without -p too, which never reads it).
var parsers = sync.OnceValue(func() map[string]parser {
	addCgroupProperties()
	addExecuteProperties()
	addKillProperties()
	addServiceProperties()
	addUnitProperties()
	return properties
})

// add sets f, which returns one property, as the parser of keys.
func add(f func(key, value string) (Property, error), keys ...string) {
	addParser(one(f), keys...)
}

func addCgroupProperties() {
	add(parseString, "DevicePolicy", "ManagedOOMSwap", "ManagedOOMMemoryPressure", "ManagedOOMPreference")
	add(parseSlice, "Slice")
	add(parseScale, "ManagedOOMMemoryPressureLimit")
	add(parseBool, "CPUAccounting", "MemoryAccounting", "IOAccounting", "BlockIOAccounting", "TasksAccounting",
		"IPAccounting")
	add(parseWeight, "CPUWeight", "StartupCPUWeight", "IOWeight", "StartupIOWeight")
	add(rangeOrEmpty(2, 262144), "CPUShares", "StartupCPUShares")
	add(parseCPUSet, "AllowedCPUs", "StartupAllowedCPUs", "AllowedMemoryNodes", "StartupAllowedMemoryNodes")
	add(rangeOrEmpty(10, 1000), "BlockIOWeight", "StartupBlockIOWeight")
	add(wordList, "DisableControllers")
	add(parseDelegate, "Delegate")
	add(parseLimit, "MemoryMin", "DefaultMemoryLow", "DefaultMemoryMin", "MemoryLow", "MemoryHigh", "MemoryMax",
		"MemorySwapMax", "MemoryLimit", "TasksMax")
	add(parseCPUQuota, "CPUQuota")
	add(parseCPUQuotaPeriod, "CPUQuotaPeriodSec")
	add(parseDeviceAllow, "DeviceAllow")
	add(parseIOLimit, "IOReadBandwidthMax", "IOWriteBandwidthMax", "IOReadIOPSMax", "IOWriteIOPSMax",
		"BlockIOReadBandwidth", "BlockIOWriteBandwidth")
	add(parseDeviceWeight, "IODeviceWeight", "BlockIODeviceWeight")
	add(parseDeviceLatency, "IODeviceLatencyTargetSec")
	add(parseIPAccess, "IPAddressAllow", "IPAddressDeny")
	add(parseOptionalPath, "IPIngressFilterPath", "IPEgressFilterPath")
	add(parseBPFProgram, "BPFProgram")
	add(parseSocketBind, "SocketBindAllow", "SocketBindDeny")
}

func addExecuteProperties() {
	add(parseString, "User", "Group", "UtmpIdentifier", "UtmpMode", "PAMName", "TTYPath",
		"SyslogIdentifier", "SELinuxContext", "RootImage", "RootVerity", "RuntimeDirectoryPreserve", "Personality",
		"KeyringMode", "ProtectProc", "ProcSubset", "NetworkNamespacePath", "IPCNamespacePath", "LogNamespace")
	add(parseWorkingDirectory, "WorkingDirectory")
	add(parseAbsolutePath, "RootDirectory")
	add(boolOr("full", "strict"), "ProtectSystem")
	add(boolOr("read-only", "tmpfs"), "ProtectHome")
	add(parseBool, "IgnoreSIGPIPE", "TTYVHangup", "TTYReset", "TTYVTDisallocate", "PrivateTmp", "PrivateDevices",
		"PrivateNetwork", "PrivateUsers", "PrivateMounts", "PrivateIPC", "NoNewPrivileges", "SyslogLevelPrefix",
		"MemoryDenyWriteExecute", "RestrictRealtime", "DynamicUser", "RemoveIPC", "ProtectKernelTunables",
		"ProtectKernelModules", "ProtectKernelLogs", "ProtectClock", "ProtectControlGroups", "MountAPIVFS",
		"CPUSchedulingResetOnFork", "LockPersonality", "ProtectHostname", "RestrictSUIDSGID")
	add(pathList, "ReadWriteDirectories", "ReadOnlyDirectories", "InaccessibleDirectories", "ReadWritePaths",
		"ReadOnlyPaths", "InaccessiblePaths", "ExecPaths", "NoExecPaths")
	add(wordList, "ExecSearchPath", "ExtensionDirectories", "ConfigurationDirectory", "SupplementaryGroups",
		"SystemCallArchitectures")
	add(lookup(logLevels, 7), "SyslogLevel", "LogLevelMax")
	add(lookup(logFacilities, 127), "SyslogFacility")
	add(parseSecureBits, "SecureBits")
	add(lookup(schedPolicies, math.MaxInt32), "CPUSchedulingPolicy")
	add(parseInt, "CPUSchedulingPriority")
	add(parseOOMScoreAdjust, "OOMScoreAdjust")
	add(parseCoredumpFilter, "CoredumpFilter")
	add(parseNice, "Nice")
	add(parseErrnoOrAction, "SystemCallErrorNumber")
	add(lookup(ioprioClasses, 8), "IOSchedulingClass")
	add(parseIOPriority, "IOSchedulingPriority")
	add(parseUMask, "RuntimeDirectoryMode", "StateDirectoryMode", "CacheDirectoryMode", "LogsDirectoryMode",
		"ConfigurationDirectoryMode", "UMask")
	add(parseNSec, "TimerSlackNSec")
	add(parseSecProperty, "LogRateLimitIntervalSec")
	add(parseUint32, "LogRateLimitBurst", "TTYRows", "TTYColumns")
	add(parseMountFlags, "MountFlags")
	add(envList(checkAssignment), "Environment")
	add(envList(checkUnset), "UnsetEnvironment")
	add(envList(checkEnvName), "PassEnvironment")
	add(parseEnvironmentFile, "EnvironmentFile")
	add(parseSetCredential, "SetCredential", "SetCredentialEncrypted")
	add(parseLoadCredential, "LoadCredential", "LoadCredentialEncrypted")
	add(parseLogExtraFields, "LogExtraFields")
	add(parseInput, "StandardInput")
	add(parseOutput, "StandardOutput", "StandardError")
	add(parseInputText, "StandardInputText")
	add(parseInputData, "StandardInputData")
	addParser(parseRlimit, rlimitNames()...)
	add(parseOptionalName, "AppArmorProfile", "SmackProcessLabel")
	add(parseCapabilities, "CapabilityBoundingSet", "AmbientCapabilities")
	add(parseCPUAffinity, "CPUAffinity")
	add(parseNUMAPolicy, "NUMAPolicy")
	add(parseNUMAMask, "NUMAMask")
	add(parseFilter, "RestrictAddressFamilies", "RestrictFileSystems", "SystemCallFilter", "SystemCallLog",
		"RestrictNetworkInterfaces")
	add(parseRestrictNamespaces, "RestrictNamespaces")
	add(parseBindPaths, "BindPaths", "BindReadOnlyPaths")
	add(parseTemporaryFileSystem, "TemporaryFileSystem")
	add(parseRootHash, "RootHash")
	add(parseRootHashSignature, "RootHashSignature")
	add(parseRootImageOptions, "RootImageOptions")
	add(parseMountImages, "MountImages")
	add(parseExtensionImages, "ExtensionImages")
	addParser(parseDirectories, "StateDirectory", "RuntimeDirectory", "CacheDirectory", "LogsDirectory")
}

func addKillProperties() {
	add(oneOf("control-group", "process", "mixed", "none"), "KillMode")
	add(parseBool, "SendSIGHUP", "SendSIGKILL")
	add(parseSignal, "KillSignal", "RestartKillSignal", "FinalKillSignal", "WatchdogSignal")
}

func addServiceProperties() {
	add(parseString, "PIDFile", "BusName", "USBFunctionDescriptors", "USBFunctionStrings",
		"TimeoutStartFailureMode", "TimeoutStopFailureMode")
	add(oneOf("simple", "exec", "forking", "oneshot", "dbus", "notify", "idle"), "Type")
	add(oneOf("main", "cgroup"), "ExitType")
	add(oneOf("no", "on-success", "on-failure", "on-abnormal", "on-watchdog", "on-abort", "always"), "Restart")
	add(oneOf("none", "main", "exec", "all"), "NotifyAccess")
	add(oneOf("continue", "stop", "kill"), "OOMPolicy")
	add(parseBool, "PermissionsStartOnly", "RootDirectoryStartOnly", "RemainAfterExit", "GuessMainPID")
	add(parseSecProperty, "RestartSec", "TimeoutStartSec", "TimeoutStopSec", "TimeoutAbortSec", "RuntimeMaxSec",
		"RuntimeRandomizedExtraSec", "WatchdogSec")
	addParser(parseTimeoutSec, "TimeoutSec")
	add(parseUint32, "FileDescriptorStoreMax")
	add(parseExecCommand, "ExecCondition", "ExecStartPre", "ExecStartPost", "ExecConditionEx", "ExecStartPreEx",
		"ExecStartPostEx", "ExecReload", "ExecStop", "ExecStopPost", "ExecReloadEx", "ExecStopEx", "ExecStopPostEx")
	add(parseExitStatusSet, "RestartPreventExitStatus", "RestartForceExitStatus", "SuccessExitStatus")
}

func addUnitProperties() {
	add(parseString, "Description", "SourcePath", "OnFailureJobMode", "JobTimeoutAction",
		"JobTimeoutRebootArgument", "StartLimitAction", "FailureAction", "SuccessAction", "RebootArgument")
	add(oneOf("inactive", "inactive-or-failed"), "CollectMode")
	add(parseBool, "StopWhenUnneeded", "RefuseManualStart", "RefuseManualStop", "AllowIsolate", "IgnoreOnIsolate",
		"DefaultDependencies")
	add(parseSecProperty, "JobTimeoutSec", "JobRunningTimeoutSec", "StartLimitIntervalSec")
	add(parseUint32, "StartLimitBurst")
	add(parseExitStatus, "SuccessActionExitStatus", "FailureActionExitStatus")
	add(unitList, "Requires", "Requisite", "Wants", "BindsTo", "PartOf", "Upholds", "Conflicts", "Before", "After",
		"OnSuccess", "OnFailure", "PropagatesReloadTo", "ReloadPropagatedFrom", "PropagatesStopTo",
		"StopPropagatedFrom", "JoinsNamespaceOf")
	add(wordList, "Documentation", "RequiresMountsFor", "Markers")
	for _, c := range conditions {
		add(parseCondition("Conditions"), "Condition"+c)
		add(parseCondition("Asserts"), "Assert"+c)
	}
}

// addParser sets the parser of keys.
func addParser(p parser, keys ...string) {
	for _, k := range keys {
		if _, dup := properties[k]; dup {
			panic("unit: property " + k + " twice in the table")
		}
		properties[k] = p
	}
}

func parseBool(key, v string) (Property, error) {
	b, err := parseBoolean(v)
	if err != nil {
		return Property{}, fmt.Errorf("%q is not a boolean (want yes/no, true/false, on/off, 1/0)", v)
	}
	return prop(key, b), nil
}

func parseString(key, v string) (Property, error) { return prop(key, v), nil }

func oneOf(values ...string) func(key, v string) (Property, error) {
	return func(key, v string) (Property, error) {
		if !slices.Contains(values, v) {
			return Property{}, fmt.Errorf("%q is not one of %s", v, strings.Join(values, ", "))
		}
		return prop(key, v), nil
	}
}

func boolOr(values ...string) func(key, v string) (Property, error) {
	return func(key, v string) (Property, error) {
		if _, err := parseBoolean(v); err != nil && !slices.Contains(values, v) {
			return Property{}, fmt.Errorf("%q is neither a boolean nor one of %s", v, strings.Join(values, ", "))
		}
		return prop(key, v), nil
	}
}

// outputs are the plain values of StandardOutput and StandardError.
var outputs = []string{"inherit", "null", "tty", "journal", "kmsg", "journal+console", "kmsg+console", "socket"}

func parseOutput(key, v string) (Property, error) {
	for _, f := range []struct{ prefix, suffix string }{
		{"fd:", "FileDescriptorName"}, {"file:", "File"}, {"append:", "FileToAppend"}, {"truncate:", "FileToTruncate"},
	} {
		if rest, ok := strings.CutPrefix(v, f.prefix); ok {
			if f.prefix != "fd:" && !strings.HasPrefix(rest, "/") {
				return Property{}, fmt.Errorf("%q: %q is not an absolute path", v, rest)
			}
			return prop(key+f.suffix, rest), nil
		}
	}
	if !slices.Contains(outputs, v) {
		return Property{}, fmt.Errorf("%q is not one of %s, or fd:NAME, file:PATH, append:PATH, truncate:PATH", v, strings.Join(outputs, ", "))
	}
	return prop(key, v), nil
}

func parseSlice(key, v string) (Property, error) {
	if err := Validate(v); err != nil {
		return Property{}, err
	}
	if !strings.HasSuffix(v, ".slice") || strings.IndexByte(v, '@') >= 0 {
		return Property{}, fmt.Errorf("%q is not a slice name (want NAME.slice, without '@')", v)
	}
	return prop(key, v), nil
}

func parseWorkingDirectory(key, v string) (Property, error) {
	if d := strings.TrimPrefix(v, "-"); d != "" && d != "~" && !strings.HasPrefix(d, "/") {
		return Property{}, fmt.Errorf("%q is not an absolute path or '~' (optionally after '-')", v)
	}
	return prop(key, v), nil
}

func parseAbsolutePath(key, v string) (Property, error) {
	if !strings.HasPrefix(v, "/") {
		return Property{}, fmt.Errorf("%q is not an absolute path", v)
	}
	return prop(key, v), nil
}

func parseSecProperty(key, v string) (Property, error) {
	usec, err := parseSec(v)
	if err != nil {
		return Property{}, spanError("value", v, err)
	}
	return prop(strings.TrimSuffix(key, "Sec")+"USec", usec), nil
}

func parseCPUQuotaPeriod(key, v string) (Property, error) {
	if trimLeftWhitespace(v) == "" {
		return prop("CPUQuotaPeriodUSec", uint64(Infinity)), nil
	}
	return parseSecProperty(key, v)
}

// parseLimit parses the memory limits and TasksMax.
func parseLimit(key, v string) (Property, error) {
	switch v {
	case "infinity":
		return prop(key, uint64(Infinity)), nil
	case "":
		if key == "MemoryMin" || key == "MemoryLow" || key == "DefaultMemoryMin" || key == "DefaultMemoryLow" {
			return prop(key, uint64(0)), nil
		}
		return prop(key, uint64(Infinity)), nil
	}
	if p, err := parsePermyriad(v); err == nil && p <= 10000 {
		return prop(key+"Scale", uint32((uint64(p)*math.MaxUint32+5000)/10000)), nil
	}
	if key == "TasksMax" {
		n, err := safeAtou(v, 0, 64, false)
		if err != nil {
			return Property{}, fmt.Errorf("%q is not a count, a percentage up to 100%% or infinity", v)
		}
		return prop(key, n), nil
	}
	n, err := parseSize(v)
	if err != nil {
		return Property{}, fmt.Errorf("%q is not a size (such as 4096, 100K, 512M, 1.5G), a percentage up to 100%% or infinity", v)
	}
	return prop(key, n), nil
}

func parseCPUQuota(key, v string) (Property, error) {
	if v == "" {
		return prop("CPUQuotaPerSecUSec", uint64(Infinity)), nil
	}
	p, err := parsePermyriad(v)
	switch {
	case err != nil:
		return Property{}, fmt.Errorf("%q is not a percentage (such as 50%%, 150%%, 12.5%%)", v)
	case p == 0:
		return Property{}, errors.New("0% is too small")
	}
	return prop("CPUQuotaPerSecUSec", uint64(p)*1000000/10000), nil
}

// parseWeight is systemd's cg_weight_parse, and cg_cpu_weight_parse, which
// also takes "idle", for the CPU weights.
func parseWeight(key, v string) (Property, error) {
	if v == "" {
		return prop(key, uint64(Infinity)), nil
	}
	if v == "idle" && strings.HasSuffix(key, "CPUWeight") {
		return prop(key, uint64(0)), nil
	}
	n, err := safeAtou(v, 0, 64, false)
	if err != nil || n < 1 || n > 10000 {
		return Property{}, fmt.Errorf("%q is not a weight in 1..10000", v)
	}
	return prop(key, n), nil
}

func parseNice(key, v string) (Property, error) {
	n, err := safeAtoi(v)
	if err != nil || n < -20 || n > 19 {
		return Property{}, fmt.Errorf("%q is not a nice level in -20..19", v)
	}
	return prop(key, n), nil
}

func parseOOMScoreAdjust(key, v string) (Property, error) {
	n, err := safeAtoi(v)
	if err != nil || n < -1000 || n > 1000 {
		return Property{}, fmt.Errorf("%q is not an OOM score adjustment in -1000..1000", v)
	}
	return prop(key, n), nil
}

func parseSignal(key, v string) (Property, error) {
	n, err := signalFromString(v)
	if err != nil {
		return Property{}, fmt.Errorf("%q is not a signal (such as SIGTERM, TERM, RTMIN+3 or a number 1..64)", v)
	}
	return prop(key, n), nil
}

func parseExitStatus(key, v string) (Property, error) {
	if v == "" {
		return prop(key, int32(-1)), nil
	}
	n, err := safeAtou(v, 0, 8, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q is not an exit status in 0..255", v)
	}
	return prop(key, int32(n)), nil
}

// parseUMask is systemd's parse_mode.
func parseUMask(key, v string) (Property, error) {
	n, err := safeAtou(v, 8, 32, true)
	if err != nil || n > 0o7777 {
		return Property{}, fmt.Errorf("%q is not an octal mode in 0..7777", v)
	}
	return prop(key, uint32(n)), nil
}

// parseDelegate sends a boolean as Delegate and anything else as the list
// of controllers DelegateControllers.
func parseDelegate(key, v string) (Property, error) {
	if b, err := parseBoolean(v); err == nil {
		return prop(key, b), nil
	}
	words, err := splitWords(v, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	return prop("DelegateControllers", nonNil(words)), nil
}

func wordList(key, v string) (Property, error) {
	words, err := splitWords(v, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	return prop(key, nonNil(words)), nil
}

func unitList(key, v string) (Property, error) {
	words, err := splitWords(v, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	for _, w := range words {
		if err := Validate(w); err != nil {
			return Property{}, err
		}
		if isTemplate(w) {
			return Property{}, fmt.Errorf("unit name %q: a template, not a unit", w)
		}
	}
	return prop(key, nonNil(words)), nil
}

func pathList(key, v string) (Property, error) {
	words, err := splitWords(v, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	for _, w := range words {
		if p := strings.TrimPrefix(strings.TrimPrefix(w, "-"), "+"); !strings.HasPrefix(p, "/") {
			return Property{}, fmt.Errorf("path %q is not absolute (after an optional '-' and '+')", w)
		}
	}
	return prop(key, nonNil(words)), nil
}

func envList(check func(string) error) func(key, v string) (Property, error) {
	return func(key, v string) (Property, error) {
		words, err := splitWords(v, true)
		if err != nil {
			return Property{}, fmt.Errorf("%q: %v", v, err)
		}
		for _, w := range words {
			if err := check(w); err != nil {
				return Property{}, err
			}
		}
		return prop(key, nonNil(words)), nil
	}
}

func checkAssignment(w string) error {
	k, v, ok := strings.Cut(w, "=")
	if !ok {
		return fmt.Errorf("%q is not an assignment NAME=VALUE", w)
	}
	if err := checkEnvName(k); err != nil {
		return err
	}
	return CheckEnvValue(k, v)
}

func checkUnset(w string) error {
	if strings.IndexByte(w, '=') >= 0 {
		return checkAssignment(w)
	}
	return checkEnvName(w)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
