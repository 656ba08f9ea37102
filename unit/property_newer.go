package unit

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Oldest is the systemd release whose systemd-run table ParseProperty
// follows in full: a manager of this release takes every setting
// ParseProperty knows but the newer ones, whose release PropertySince
// tells.
const Oldest = 252

// A newerProperty is a setting of a service that systemd-run takes from a
// version newer than Oldest on.
type newerProperty struct {
	name  string
	since int // the first systemd version that takes it
	parse func(key, value string) (Property, error)
}

// newerProperties are the settings of a service that systemd-run's table
// (bus_append_unit_property_assignment in src/shared/bus-unit-util.c: its
// cgroup, execute, kill, service and unit parts) gained after systemd 252,
// up to systemd 261, with the release that first has each, and the kinds
// of Condition*= and Assert*= that src/shared/condition.c gained. Each is
// parsed as that table parses it in systemd 261. Sorted by name, so that
// it is static data and lookups are binary searches; TestNewerProperties
// holds the facts it was made from.
var newerProperties = []newerProperty{
	{"AssertFraction", 261, parseNewerCondition},
	{"AssertKernelModuleLoaded", 258, parseNewerCondition},
	{"AssertMachineTag", 261, parseNewerCondition},
	{"AssertPathIsSocket", 260, parseNewerCondition},
	{"AssertVersion", 258, parseNewerCondition},
	{"BPFDelegateAttachments", 258, parseString},
	{"BPFDelegateCommands", 258, parseString},
	{"BPFDelegateMaps", 258, parseString},
	{"BPFDelegatePrograms", 258, parseString},
	{"BindLogSockets", 257, parseBool},
	{"BindNetworkInterface", 260, parseString},
	{"CPUPressureThresholdSec", 261, parseSecProperty},
	{"CPUPressureWatch", 261, parseString},
	{"CPUSetPartition", 261, parseString},
	{"CacheDirectoryAccounting", 258, parseBool},
	{"CacheDirectoryQuota", 258, parseQuota},
	{"ConditionFraction", 261, parseNewerCondition},
	{"ConditionKernelModuleLoaded", 258, parseNewerCondition},
	{"ConditionMachineTag", 261, parseNewerCondition},
	{"ConditionPathIsSocket", 260, parseNewerCondition},
	{"ConditionVersion", 258, parseNewerCondition},
	{"CoredumpReceive", 255, parseBool},
	{"DelegateNamespaces", 258, parseDelegateNamespaces},
	{"DelegateSubgroup", 254, parseString},
	{"ExecReloadPost", 259, parseExecCommand},
	{"ExecReloadPostEx", 259, parseExecCommand},
	{"ExtensionImagePolicy", 254, parseString},
	{"FileDescriptorStorePreserve", 254, parseString},
	{"IOPressureThresholdSec", 261, parseSecProperty},
	{"IOPressureWatch", 261, parseString},
	{"ImportCredential", 254, parseImportCredential},
	{"ImportCredentialEx", 257, parseImportCredential},
	{"LogFilterPatterns", 253, parseLogFilterPatterns},
	{"LogsDirectoryAccounting", 258, parseBool},
	{"LogsDirectoryQuota", 258, parseQuota},
	{"ManagedOOMMemoryPressureDurationSec", 257, parseSecOrInfinity},
	{"MemoryKSM", 254, parseBool},
	{"MemoryPressureThresholdSec", 254, parseSecProperty},
	{"MemoryPressureWatch", 254, parseString},
	{"MemoryTHP", 260, parseString},
	{"MemoryZSwapMax", 253, parseLimit},
	{"MemoryZSwapWriteback", 256, parseBool},
	{"MountImagePolicy", 254, parseString},
	{"NFTSet", 255, parseNFTSet},
	{"OOMRules", 261, wordList},
	{"OpenFile", 253, parseOpenFile},
	{"PrivateBPF", 258, parseString},
	{"PrivatePIDs", 257, parseString},
	{"PrivateTmpEx", 257, parseBoolOrEx},
	{"PrivateUsersEx", 257, parseBoolOrEx},
	{"ProtectControlGroupsEx", 257, parseBoolOrEx},
	{"ProtectHostnameEx", 258, parseProtectHostname},
	{"RefreshOnReload", 260, parseRefreshOnReload},
	{"ReloadSignal", 253, parseSignal},
	{"RestartMaxDelaySec", 254, parseSecProperty},
	{"RestartMode", 254, parseString},
	{"RestartSteps", 254, parseUint32},
	{"RootEphemeral", 254, parseBool},
	{"RootImagePolicy", 254, parseString},
	{"RootMStack", 260, parseString},
	{"SetLoginEnvironment", 255, parseBool},
	{"StateDirectoryAccounting", 258, parseBool},
	{"StateDirectoryQuota", 258, parseQuota},
	{"SurviveFinalKillSignal", 255, parseBool},
	{"UserNamespacePath", 259, parseString},
	{"WantsMountsFor", 256, wordList},
}

// findNewer returns the entry of newerProperties for key.
func findNewer(key string) (newerProperty, bool) {
	i, ok := slices.BinarySearchFunc(newerProperties, key, func(p newerProperty, key string) int {
		return strings.Compare(p.name, key)
	})
	if !ok {
		return newerProperty{}, false
	}
	return newerProperties[i], true
}

// PropertySince returns the first systemd version whose manager takes the
// setting name (Oldest for those systemd 252 already takes), and 0 for a
// setting ParseProperty does not know.
func PropertySince(name string) int {
	if p, ok := findNewer(name); ok {
		return p.since
	}
	if _, ok := parsers()[name]; ok {
		return Oldest
	}
	return 0
}

// A VersionError is a property that the connected manager is too old to
// take.
type VersionError struct {
	Setting string // the setting, as in "RestartSteps"
	Needs   int    // the first systemd version that takes it
	Manager int    // the manager's systemd version
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s= needs systemd %d; this manager is %d", e.Setting, e.Needs, e.Manager)
}

// CheckVersion returns a *VersionError for the first of props that a
// manager of systemd version (its Version property, such as
// "252.38-1~deb12u1") does not take. A version whose leading number
// cannot be read is taken to have every property, and the manager judges.
func CheckVersion(props []Property, version string) error {
	v, ok := ParseVersion(version)
	if !ok {
		return nil
	}
	for _, p := range props {
		if p.Since > v {
			return &VersionError{Setting: p.Setting, Needs: p.Since, Manager: v}
		}
	}
	return nil
}

// NeedsVersion reports whether any of props needs a systemd newer than
// Oldest, so that CheckVersion is worth the manager's version.
func NeedsVersion(props []Property) bool {
	return slices.ContainsFunc(props, func(p Property) bool { return p.Since > Oldest })
}

// ParseVersion returns the release number that a systemd version string
// starts with: 252 of "252.38-1~deb12u1", 258 of "258~rc1" or "v258".
func ParseVersion(s string) (int, bool) {
	s = strings.TrimPrefix(s, "v")
	n := 0
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 1e6; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n, i > 0
}

// parseNewerCondition is parseCondition for a Condition*= or Assert*=.
func parseNewerCondition(key, v string) (Property, error) {
	if strings.HasPrefix(key, "Assert") {
		return parseCondition("Asserts")(key, v)
	}
	return parseCondition("Conditions")(key, v)
}

// parseSecOrInfinity is parseSecProperty with empty as "infinity".
func parseSecOrInfinity(key, v string) (Property, error) {
	if v == "" {
		v = "infinity"
	}
	return parseSecProperty(key, v)
}

// A boolString is a D-Bus (bs).
type boolString struct {
	B bool
	S string
}

// parseLogFilterPatterns is PATTERN, kept, or ~PATTERN, dropped; empty
// resets the list.
func parseLogFilterPatterns(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []boolString{}), nil
	}
	p, drop := strings.CutPrefix(v, "~")
	return prop(key, []boolString{{!drop, p}}), nil
}

// parseRefreshOnReload is a list of words, all after '~' to turn them off.
func parseRefreshOnReload(key, v string) (Property, error) {
	p, off := strings.CutPrefix(v, "~")
	words, err := allWords(p, whitespace, 0)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	list := []boolString{}
	for _, w := range words {
		list = append(list, boolString{off, w})
	}
	return prop(key, list), nil
}

// parseImportCredential is GLOB, sent as ImportCredential, or GLOB:RENAME,
// sent as ImportCredentialEx; empty resets the list.
func parseImportCredential(_, v string) (Property, error) {
	if v == "" {
		return prop("ImportCredential", []string{}), nil
	}
	c := cursor{s: v}
	glob, _, err := c.extractWord(":", xDontCoalesce)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	rename, ok := c.rest()
	if !ok {
		return prop("ImportCredential", []string{v}), nil
	}
	return prop("ImportCredentialEx", []stringPair{{glob, rename}}), nil
}

// parseBoolOrEx sends a boolean as the setting without "Ex" and any other
// value as a string under the name with "Ex", which the manager checks.
func parseBoolOrEx(key, v string) (Property, error) {
	name := strings.TrimSuffix(key, "Ex")
	if b, err := parseBoolean(v); err == nil {
		return prop(name, b), nil
	}
	return prop(name+"Ex", v), nil
}

// parseProtectHostname sends a boolean as ProtectHostname and MODE or
// MODE:HOSTNAME as ProtectHostnameEx.
func parseProtectHostname(key, v string) (Property, error) {
	if b, err := parseBoolean(v); err == nil {
		return prop("ProtectHostname", b), nil
	}
	mode, host, colon := strings.Cut(v, ":")
	if colon && host == "" {
		return Property{}, fmt.Errorf("%q: the hostname after ':' is empty", v)
	}
	return prop("ProtectHostnameEx", stringPair{mode, host}), nil
}

// A quota is a D-Bus (tus): a size in bytes, a share of the file system
// (2^32-1 is all of it), and whether the quota is enforced ("yes", "no").
type quota struct {
	Bytes   uint64
	Scale   uint32
	Enforce string
}

// parseQuota is a size, a percentage, or "off" or empty for none.
func parseQuota(key, v string) (Property, error) {
	q := quota{uint64(Infinity), 1<<32 - 1, "no"}
	if v != "" && v != "off" {
		if p, err := parsePermyriad(v); err == nil && p <= 10000 {
			q.Scale = uint32((uint64(p)*(1<<32-1) + 5000) / 10000)
		} else if q.Bytes, err = parseSize(v); err != nil {
			return Property{}, fmt.Errorf("%q is not a size (such as 512M, 10G), a percentage up to 100%% or off", v)
		}
		q.Enforce = "yes"
	}
	return prop(key, q), nil
}

// parseDelegateNamespaces is a boolean (every namespace but the user
// namespace, or none) or a list of namespace names, after '~' those not
// delegated.
func parseDelegateNamespaces(key, v string) (Property, error) {
	const all = (namespacesAll | unix.CLONE_NEWTIME) &^ unix.CLONE_NEWUSER
	if b, err := parseBoolean(v); err == nil {
		if b {
			return prop(key, uint64(all)), nil
		}
		return prop(key, uint64(0)), nil
	}
	flags, err := namespaceList(v, all)
	if err != nil {
		return Property{}, err
	}
	return prop(key, flags), nil
}

// An openFile is a D-Bus (sst): path, file descriptor name and flags.
type openFile struct {
	Path, Name string
	Flags      uint64
}

// openFileFlags are the options of OpenFile=, each a bit.
var openFileFlags = []string{"read-only", "append", "truncate", "graceful"}

// parseOpenFile is PATH[:NAME[:OPTIONS]], OPTIONS separated by ',', NAME
// the file name of PATH if empty.
func parseOpenFile(key, v string) (Property, error) {
	c := cursor{s: v}
	var words [3]string
	for i := range words {
		w, ok, err := c.extractWord(":", xDontCoalesce|xCunescape)
		if err != nil {
			return Property{}, fmt.Errorf("%q: %v", v, err)
		}
		if !ok {
			break
		}
		words[i] = w
	}
	if rest, ok := c.rest(); ok && rest != "" {
		return Property{}, fmt.Errorf("%q is not PATH[:NAME[:OPTIONS]]", v)
	}
	f := openFile{Path: words[0], Name: words[1]}
	if !strings.HasPrefix(f.Path, "/") {
		return Property{}, fmt.Errorf("%q: %q is not an absolute path", v, f.Path)
	}
	if f.Name == "" {
		f.Name = path.Base(f.Path)
	}
	if len(f.Name) > 255 || strings.ContainsFunc(f.Name, func(r rune) bool { return r < ' ' || r > '~' || r == ':' }) {
		return Property{}, fmt.Errorf("%q: %q is not a file descriptor name (printable ASCII without ':', at most 255 bytes)", v, f.Name)
	}
	if words[2] != "" {
		for _, o := range strings.Split(words[2], ",") {
			i := slices.Index(openFileFlags, o)
			if i < 0 || f.Flags&(1<<i) != 0 {
				return Property{}, fmt.Errorf("%q: %q is not an option (%s, each once)", v, o, strings.Join(openFileFlags, ", "))
			}
			f.Flags |= 1 << i
		}
	}
	if n := f.Flags & 0b111; n&(n-1) != 0 {
		return Property{}, fmt.Errorf("%q: give at most one of read-only, append and truncate", v)
	}
	return prop(key, []openFile{f}), nil
}

// An nftSet is a D-Bus (iiss): the source of the elements, the netfilter
// protocol family, the table and the set.
type nftSet struct {
	Source, Family int32
	Table, Set     string
}

// nftSources and nftFamilies are the names of the sources an NFTSet=
// takes and of the netfilter protocol families; a name's index is its
// number.
var (
	nftSources  = []string{3: "cgroup", "user", "group"}
	nftFamilies = []string{1: "inet", "ip", "arp", 5: "netdev", 7: "bridge", 10: "ip6"}
)

// nftNumber returns the number of name in names, or false.
func nftNumber(names []string, name string) (int32, bool) {
	i := slices.Index(names, name)
	return int32(i), name != "" && i >= 0
}

// parseNFTSet is a list of SOURCE:FAMILY:TABLE:SET; empty resets it.
func parseNFTSet(key, v string) (Property, error) {
	tuples, err := allWords(v, whitespace, xUnquote|xRetainEscape)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	sets := []nftSet{}
	for _, t := range tuples {
		f, err := allWords(t, ":", xCunescape|xDontCoalesce)
		if err != nil || len(f) != 4 {
			return Property{}, fmt.Errorf("%q is not SOURCE:FAMILY:TABLE:SET", t)
		}
		src, ok := nftNumber(nftSources, f[0])
		if !ok {
			return Property{}, fmt.Errorf("%q: source %q is not cgroup, user or group", t, f[0])
		}
		fam, ok := nftNumber(nftFamilies, f[1])
		if !ok {
			return Property{}, fmt.Errorf("%q: %q is not a netfilter family (inet, ip, ip6, arp, bridge, netdev)", t, f[1])
		}
		for _, id := range f[2:] {
			if !nftIdentifier(id) {
				return Property{}, fmt.Errorf("%q: %q is not a table or set name (a letter, then letters, digits, '/', '\\', '_', '.')", t, id)
			}
		}
		sets = append(sets, nftSet{src, fam, f[2], f[3]})
	}
	return prop(key, sets), nil
}

// nftIdentifier reports whether id names an nftables table or set.
func nftIdentifier(id string) bool {
	if id == "" || len(id) >= 256 || !isASCIILetter(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !isASCIILetter(c) && (c < '0' || c > '9') && !strings.ContainsRune(`/\_.`, rune(c)) {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
