package unit

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
)

// The parsers of this file follow those of systemd 252's bus-unit-util.c
// for the values that are not plain booleans, strings, time spans or
// lists: each is named after the setting it serves, and sends the D-Bus
// type systemd-run sends.

// parseScale is a percentage up to 100%, sent scaled to 2^32-1.
func parseScale(key, v string) (Property, error) {
	p, err := parsePermyriad(v)
	if err != nil || p > 10000 {
		return Property{}, fmt.Errorf("%q is not a percentage up to 100%%", v)
	}
	return prop(key, scale(p)), nil
}

func scale(permyriad int) uint32 {
	return uint32((uint64(permyriad)*math.MaxUint32 + 5000) / 10000)
}

// rangeOrEmpty parses a number in lo..hi, or empty for the default.
func rangeOrEmpty(lo, hi uint64) func(key, v string) (Property, error) {
	return func(key, v string) (Property, error) {
		if v == "" {
			return prop(key, uint64(math.MaxUint64)), nil
		}
		n, err := safeAtou(v, 0, 64, false)
		if err != nil || n < lo || n > hi {
			return Property{}, fmt.Errorf("%q is not a number in %d..%d", v, lo, hi)
		}
		return prop(key, n), nil
	}
}

func parseInt(key, v string) (Property, error) {
	n, err := safeAtoi(v)
	if err != nil {
		return Property{}, fmt.Errorf("%q is not an integer", v)
	}
	return prop(key, n), nil
}

func parseUint32(key, v string) (Property, error) {
	n, err := safeAtou(v, 0, 32, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q is not a number in 0..4294967295", v)
	}
	return prop(key, uint32(n)), nil
}

// lookup parses a name of table (its index is the value) or a number up
// to max, as systemd's string tables with a numeric fallback do.
func lookup(table []string, max uint64) func(key, v string) (Property, error) {
	return func(key, v string) (Property, error) {
		for i, name := range table {
			if name != "" && name == v {
				return prop(key, int32(i)), nil
			}
		}
		n, err := safeAtou(v, 0, 32, false)
		if err != nil || n > max {
			return Property{}, fmt.Errorf("%q is not one of %s, or a number up to %d", v, strings.Join(nonEmpty(table), ", "), max)
		}
		return prop(key, int32(n)), nil
	}
}

func nonEmpty(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// parseSecureBits sets the bits named; other words are ignored, as systemd
// does.
func parseSecureBits(key, v string) (Property, error) {
	bits := int32(0)
	for c := (cursor{s: v}); ; {
		w, ok, err := c.extractWord(whitespace, xUnquote)
		if err != nil || !ok {
			break
		}
		for i, name := range secureBits {
			if w == name {
				bits |= 1 << i
			}
		}
	}
	return prop(key, bits), nil
}

func parseCoredumpFilter(key, v string) (Property, error) {
	words, err := allWords(v, whitespace, 0)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	var m uint64
	for _, w := range words {
		switch {
		case w == "default":
			m |= coredumpDefault
		case w == "all":
			m = coredumpAll
		default:
			if i := slices.Index(coredumpFilters, w); i >= 0 {
				m |= 1 << i
				continue
			}
			x, err := safeAtou(w, 16, 64, false)
			if err != nil {
				return Property{}, fmt.Errorf("%q is not a coredump filter name (%s, default, all) or a hexadecimal mask", w, strings.Join(coredumpFilters, ", "))
			}
			m |= x
		}
	}
	return prop(key, m), nil
}

// coredumpDefault and coredumpAll are systemd's COREDUMP_FILTER_MASK_DEFAULT
// and COREDUMP_FILTER_MASK_ALL.
const (
	coredumpDefault = 1<<0 | 1<<1 | 1<<4 | 1<<5
	coredumpAll     = math.MaxUint32
)

// parseErrnoOrAction is seccomp_parse_errno_or_action: "kill", an errno
// name such as EPERM, or a number in 0..4095.
func parseErrnoOrAction(key, v string) (Property, error) {
	if v == "kill" {
		return prop(key, int32(math.MaxInt32-1)), nil
	}
	if n, ok := errnoByName()[v]; ok {
		return prop(key, n), nil
	}
	n, err := safeAtoi(v)
	if err != nil || n < 0 || n > 4095 {
		return Property{}, fmt.Errorf("%q is not kill, an errno name such as EPERM, or a number in 0..4095", v)
	}
	return prop(key, n), nil
}

func parseIOPriority(key, v string) (Property, error) {
	n, err := safeAtoi(v)
	if err != nil || n < 0 || n > 7 {
		return Property{}, fmt.Errorf("%q is not an I/O priority in 0..7", v)
	}
	return prop(key, n), nil
}

func parseNSec(key, v string) (Property, error) {
	n, err := parseTime(v, 1, nsecUnits)
	if err != nil {
		return Property{}, spanError("value", v, err)
	}
	return prop(key, n), nil
}

// nsecUnits is the suffix table of systemd's parse_nsec.
var nsecUnits = func() []timeUnit {
	var units []timeUnit
	for _, u := range timeUnits {
		units = append(units, timeUnit{u.suffix, u.usec * 1000})
	}
	return append(units, timeUnit{"nsec", 1}, timeUnit{"ns", 1})
}()

// parseMountFlags is mount_propagation_flags_from_string.
func parseMountFlags(key, v string) (Property, error) {
	flags := map[string]uint64{"": 0, "shared": 1 << 20, "slave": 1 << 19, "private": 1 << 18}
	f, ok := flags[v]
	if !ok {
		return Property{}, fmt.Errorf("%q is not one of shared, slave, private", v)
	}
	return prop(key, f), nil
}

// A pathFlag is a path and a flag, as in EnvironmentFiles (a(sb)).
type pathFlag struct {
	Path string
	Flag bool
}

// parseEnvironmentFile sends EnvironmentFiles: the path, and whether a
// leading '-' makes a missing file no error; empty resets the list.
func parseEnvironmentFile(_, v string) (Property, error) {
	if v == "" {
		return prop("EnvironmentFiles", []pathFlag{}), nil
	}
	p, ignore := strings.CutPrefix(v, "-")
	if !strings.HasPrefix(p, "/") {
		return Property{}, fmt.Errorf("%q is not an absolute path (optionally after '-')", v)
	}
	return prop("EnvironmentFiles", []pathFlag{{p, ignore}}), nil
}

// A stringPair is a D-Bus (ss).
type stringPair struct{ A, B string }

// A credential is a D-Bus (say).
type credential struct {
	ID   string
	Data []byte
}

// parseSetCredential is ID:DATA, DATA with C escapes (SetCredential) or in
// base64 (SetCredentialEncrypted).
func parseSetCredential(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []credential{}), nil
	}
	c := cursor{s: v}
	id, ok, err := c.extractWord(":", xDontCoalesce)
	rest, more := c.rest()
	if err != nil || !ok || !more {
		return Property{}, fmt.Errorf("%q is not ID:DATA", v)
	}
	var data []byte
	if key == "SetCredentialEncrypted" {
		data, err = unbase64(rest)
	} else {
		data, err = cunescapeAll(rest, true)
	}
	if err != nil {
		return Property{}, fmt.Errorf("data %q: %v", rest, err)
	}
	return prop(key, []credential{{id, nonNilBytes(data)}}), nil
}

// parseLoadCredential is ID[:PATH]; ID alone loads the credential of that
// name.
func parseLoadCredential(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []stringPair{}), nil
	}
	c := cursor{s: v}
	id, ok, err := c.extractWord(":", xDontCoalesce)
	if err != nil || !ok {
		return Property{}, fmt.Errorf("%q is not ID[:PATH]", v)
	}
	rest, _ := c.rest()
	if rest == "" {
		rest = v
	}
	return prop(key, []stringPair{{id, rest}}), nil
}

func parseLogExtraFields(key, v string) (Property, error) {
	return prop(key, [][]byte{nonNilBytes([]byte(v))}), nil
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// inputs are the plain values of StandardInput.
var inputs = []string{"null", "tty", "tty-force", "tty-fail", "data", "socket"}

func parseInput(key, v string) (Property, error) {
	for _, f := range []struct{ prefix, suffix string }{{"fd:", "FileDescriptorName"}, {"file:", "File"}} {
		if rest, ok := strings.CutPrefix(v, f.prefix); ok {
			return prop(key+f.suffix, rest), nil
		}
	}
	if !slices.Contains(inputs, v) {
		return Property{}, fmt.Errorf("%q is not one of %s, or fd:NAME, file:PATH", v, strings.Join(inputs, ", "))
	}
	return prop(key, v), nil
}

// parseInputText sends the text, C escapes decoded, and a newline.
func parseInputText(key, v string) (Property, error) {
	b, err := cunescapeAll(v, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	return prop(key, append(b, '\n')), nil
}

func parseInputData(key, v string) (Property, error) {
	b, err := unbase64(v)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	return prop(key, nonNilBytes(b)), nil
}

// cunescapeAll decodes the C escapes of s, as systemd's cunescape; a NUL
// byte is allowed only if acceptNUL.
func cunescapeAll(s string, acceptNUL bool) ([]byte, error) {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b = append(b, s[i])
			continue
		}
		if i+1 == len(s) {
			return nil, errors.New("trailing backslash")
		}
		if n := nulEscape(s[i+1:]); acceptNUL && n > 0 {
			b = append(b, 0)
			i += n
			continue
		}
		n, err := cunescapeOne(s[i+1:], &b)
		if err != nil {
			return nil, fmt.Errorf("bad escape sequence at byte %d", i)
		}
		i += n
	}
	return b, nil
}

// nulEscape returns the length of the escape of NUL that p (after a
// backslash) starts with, \x00, \000, \u0000 or \U00000000, or 0.
func nulEscape(p string) int {
	for _, e := range []string{"x00", "000", "u0000", "U00000000"} {
		if strings.HasPrefix(p, e) {
			return len(e)
		}
	}
	return 0
}

// unbase64 decodes base64 as systemd's unbase64mem does: white space is
// ignored.
func unbase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r < 0x80 && isWhitespace(byte(r)) {
			return -1
		}
		return r
	}, s)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not valid base64")
	}
	return b, nil
}

// The resource limits, as systemd's rlimit_parse parses each: a time in
// seconds (CPU), in microseconds (RTTIME), a nice level (NICE), a size
// (the byte limits) or a count.
var rlimits = map[string]func(string) (uint64, error){
	"CPU": rlimitSec, "FSIZE": rlimitSize, "DATA": rlimitSize, "STACK": rlimitSize, "CORE": rlimitSize,
	"RSS": rlimitSize, "NOFILE": rlimitCount, "AS": rlimitSize, "NPROC": rlimitCount, "MEMLOCK": rlimitSize,
	"LOCKS": rlimitCount, "SIGPENDING": rlimitCount, "MSGQUEUE": rlimitSize, "NICE": rlimitNice,
	"RTPRIO": rlimitCount, "RTTIME": rlimitUSec,
}

func rlimitNames() []string {
	var names []string
	for r := range rlimits {
		names = append(names, "Limit"+r)
	}
	return names
}

// parseRlimit parses SOFT:HARD, or one value for both, into the hard
// limit LimitX and the soft limit LimitXSoft.
func parseRlimit(key, v string) ([]Property, error) {
	parse := rlimits[strings.TrimPrefix(key, "Limit")]
	c := cursor{s: v}
	soft, ok, err := c.extractWord(":", xDontCoalesce)
	if err != nil || !ok {
		return nil, fmt.Errorf("%q is not a limit, or SOFT:HARD", v)
	}
	sl, err := parse(soft)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", soft, err)
	}
	hl := sl
	hard, ok, err := c.extractWord(":", xDontCoalesce)
	if rest, more := c.rest(); err != nil || more && rest != "" {
		return nil, fmt.Errorf("%q is not a limit, or SOFT:HARD", v)
	}
	if ok {
		if hl, err = parse(hard); err != nil {
			return nil, fmt.Errorf("%q: %v", hard, err)
		}
		if sl > hl {
			return nil, fmt.Errorf("%q: the soft limit is above the hard limit", v)
		}
	}
	return []Property{prop(key, hl), prop(key+"Soft", sl)}, nil
}

func rlimitCount(v string) (uint64, error) {
	if v == "infinity" {
		return Infinity, nil
	}
	n, err := safeAtou(v, 0, 64, false)
	if err != nil || n == Infinity {
		return 0, errors.New("not a count or infinity")
	}
	return n, nil
}

func rlimitSize(v string) (uint64, error) {
	if v == "infinity" {
		return Infinity, nil
	}
	n, err := parseSize(v)
	if err != nil || n == Infinity {
		return 0, errors.New("not a size (such as 4096, 100K, 512M) or infinity")
	}
	return n, nil
}

func rlimitSec(v string) (uint64, error) {
	if v == "infinity" {
		return Infinity, nil
	}
	t, err := parseSec(v)
	if err != nil {
		return 0, errors.New("not a time span (such as 30, 5min) or infinity")
	}
	if t == Infinity {
		return Infinity, nil
	}
	return (t + 999999) / 1000000, nil
}

func rlimitUSec(v string) (uint64, error) {
	if v == "infinity" {
		return Infinity, nil
	}
	t, err := parseTime(v, 1, timeUnits)
	if err != nil {
		return 0, errors.New("not a time span (such as 500ms, 2s; a number counts microseconds) or infinity")
	}
	return t, nil
}

// rlimitNice is a nice level with a sign (+19, -20) or a raw limit 0..40.
func rlimitNice(v string) (uint64, error) {
	bad := errors.New("not a nice level -20..+19 (with its sign) or a raw limit 0..40")
	switch {
	case strings.HasPrefix(v, "+"):
		n, err := safeAtou(v[1:], 0, 64, false)
		if err != nil || n >= 20 {
			return 0, bad
		}
		return 20 - n, nil
	case strings.HasPrefix(v, "-"):
		n, err := safeAtou(v[1:], 0, 64, false)
		if err != nil || n > 20 {
			return 0, bad
		}
		return 20 + n, nil
	}
	n, err := safeAtou(v, 0, 64, false)
	if err != nil || n > 40 {
		return 0, bad
	}
	return n, nil
}

// A flagName is a D-Bus (bs).
type flagName struct {
	Flag bool
	Name string
}

// parseOptionalName is NAME, or -NAME to ignore a failure to apply it.
func parseOptionalName(key, v string) (Property, error) {
	name, ignore := strings.CutPrefix(v, "-")
	return prop(key, flagName{ignore, name}), nil
}

// parseCapabilities is capability_set_from_string, with '~' inverting;
// like it, it ignores names it does not know.
func parseCapabilities(key, v string) (Property, error) {
	p, invert := strings.CutPrefix(v, "~")
	var set uint64
	c := cursor{s: p}
	for {
		w, ok, err := c.extractWord(whitespace, xUnquote)
		if err != nil || !ok {
			break
		}
		if n, err := safeAtoi(w); err == nil {
			if n >= 0 && n < 64 {
				set |= 1 << n
			}
			continue
		}
		for i, name := range capabilities {
			if strings.EqualFold(w, "cap_"+name) {
				set |= 1 << i
			}
		}
	}
	if invert {
		set = ^set
	}
	return prop(key, set), nil
}

// parseCPUSet is parse_cpu_set: CPUs or ranges (0-3) separated by white
// space or commas, sent as a bitmap of whole 64-bit words.
func parseCPUSet(key, v string) (Property, error) {
	set, err := cpuSet(v)
	if err != nil {
		return Property{}, err
	}
	return prop(key, set), nil
}

func cpuSet(v string) ([]byte, error) {
	set := []byte{}
	grow := func(n uint64) {
		for need := (n + 63) / 64 * 8; uint64(len(set)) < need; {
			set = append(set, 0)
		}
	}
	words, err := allWords(v, whitespace+",", xUnquote)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", v, err)
	}
	for _, w := range words {
		lo, hi, err := parseRange(w)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number or a range N-M", w)
		}
		if lo > hi {
			grow(1)
			continue
		}
		if hi >= 8192 {
			return nil, fmt.Errorf("%q: above 8191", w)
		}
		grow(hi + 1)
		for c := lo; c <= hi; c++ {
			set[c/8] |= 1 << (c % 8)
		}
	}
	return set, nil
}

// parseRange is systemd's parse_range: N or N-M.
func parseRange(s string) (lo, hi uint64, err error) {
	c := cursor{s: s}
	w, ok, err := c.extractWord("-", xDontCoalesce)
	if err != nil || !ok {
		return 0, 0, errSyntax
	}
	if lo, err = safeAtou(w, 0, 32, false); err != nil {
		return 0, 0, err
	}
	rest, more := c.rest()
	switch {
	case !more:
		return lo, lo, nil
	case rest == "":
		return 0, 0, errSyntax
	}
	hi, err = safeAtou(rest, 0, 32, false)
	return lo, hi, err
}

func parseCPUAffinity(key, v string) (Property, error) {
	if v == "numa" {
		return prop("CPUAffinityFromNUMA", true), nil
	}
	return parseCPUSet(key, v)
}

func parseNUMAPolicy(key, v string) (Property, error) {
	i := slices.Index(numaPolicies, v)
	if i < 0 {
		return Property{}, fmt.Errorf("%q is not one of %s", v, strings.Join(numaPolicies, ", "))
	}
	return prop(key, int32(i)), nil
}

// parseNUMAMask is a set as parseCPUSet parses it; "all" is every NUMA
// node of this machine, as systemd-run computes it.
func parseNUMAMask(key, v string) (Property, error) {
	if v == "all" {
		return parseCPUSet(key, fmt.Sprintf("0-%d", maxNUMANode()))
	}
	return parseCPUSet(key, v)
}

// A filter is a D-Bus (bas): whether the list allows (or else denies),
// and the list.
type filter struct {
	Allow bool
	List  []string
}

// parseFilter is an allow list, or a deny list after '~'.
func parseFilter(key, v string) (Property, error) {
	p, deny := strings.CutPrefix(v, "~")
	words, err := splitWords(p, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	return prop(key, filter{!deny, nonNil(words)}), nil
}

// parseRestrictNamespaces is a boolean (yes restricts none), or the
// namespaces allowed (after '~': those refused), as clone flags.
func parseRestrictNamespaces(key, v string) (Property, error) {
	if b, err := parseBoolean(v); err == nil {
		if b {
			return prop(key, uint64(0)), nil
		}
		return prop(key, uint64(namespacesAll)), nil
	}
	flags, err := namespaceList(v, namespacesAll)
	if err != nil {
		return Property{}, err
	}
	return prop(key, flags), nil
}

// namespaceList returns the clone flags of the namespaces that v names,
// or after '~' those of all that it does not name.
func namespaceList(v string, all uint64) (uint64, error) {
	p, invert := strings.CutPrefix(v, "~")
	words, err := allWords(p, whitespace, 0)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", v, err)
	}
	var flags uint64
	for _, w := range words {
		f, ok := namespaces[w]
		if !ok {
			return 0, fmt.Errorf("%q is not a namespace (cgroup, ipc, net, mnt, pid, user, uts, time)", w)
		}
		flags |= f
	}
	if invert {
		flags = ^flags & all
	}
	return flags, nil
}

// A bindPath is a D-Bus (ssbt): source, destination, whether a missing
// source is ignored, and the mount flags (MS_REC for a recursive bind).
type bindPath struct {
	Source, Dest string
	Ignore       bool
	Flags        uint64
}

const msRec = 1 << 14

// parseBindPaths is [-]SOURCE[:DEST[:OPTIONS]] ...
func parseBindPaths(key, v string) (Property, error) {
	binds := []bindPath{}
	bad := func(err error) (Property, error) { return Property{}, fmt.Errorf("%q: %v", v, err) }
	seps := ":" + whitespace
	for c := (cursor{s: v}); ; {
		src, ok, err := c.extractWord(seps, xUnquote|xDontCoalesce)
		if err != nil {
			return bad(err)
		}
		if !ok {
			break
		}
		b := bindPath{Flags: msRec}
		src, b.Ignore = strings.CutPrefix(src, "-")
		b.Source, b.Dest = src, src
		if _, more := c.rest(); more && v[c.i-1] == ':' {
			if b.Dest, ok, err = c.extractWord(seps, xUnquote|xDontCoalesce); err != nil || !ok {
				return bad(errors.New("missing destination after ':'"))
			}
			if _, more := c.rest(); more && v[c.i-1] == ':' {
				opts, _, err := c.extractWord(whitespace, xUnquote)
				switch {
				case err != nil:
					return bad(err)
				case opts == "" || opts == "rbind":
				case opts == "norbind":
					b.Flags = 0
				default:
					return bad(fmt.Errorf("unknown option %q (want rbind or norbind)", opts))
				}
			}
		}
		binds = append(binds, b)
	}
	return prop(key, binds), nil
}

// parseTemporaryFileSystem is PATH[:OPTIONS] ...
func parseTemporaryFileSystem(key, v string) (Property, error) {
	words, err := splitWords(v, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	mounts := []stringPair{}
	for _, w := range words {
		c := cursor{s: w}
		p, _, err := c.extractWord(":", xDontCoalesce)
		if err != nil {
			return Property{}, fmt.Errorf("%q: %v", w, err)
		}
		opts, _ := c.rest()
		mounts = append(mounts, stringPair{p, opts})
	}
	return prop(key, mounts), nil
}

// parseRootHash is a path (sent as RootHashPath) or the hash in hex.
func parseRootHash(key, v string) (Property, error) {
	if strings.HasPrefix(v, "/") {
		return prop("RootHashPath", v), nil
	}
	b, err := hex.DecodeString(v)
	if err != nil || len(b) < 16 {
		return Property{}, fmt.Errorf("%q is neither an absolute path nor a hash of 16 bytes or more in hex", v)
	}
	return prop(key, b), nil
}

// parseRootHashSignature is a path (sent as RootHashSignaturePath) or
// base64:DATA.
func parseRootHashSignature(key, v string) (Property, error) {
	if strings.HasPrefix(v, "/") {
		return prop("RootHashSignaturePath", v), nil
	}
	data, ok := strings.CutPrefix(v, "base64:")
	if !ok {
		return Property{}, fmt.Errorf("%q is neither an absolute path nor base64:DATA", v)
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Property{}, fmt.Errorf("%q: not valid base64", v)
	}
	return prop(key, nonNilBytes(b)), nil
}

// parseRootImageOptions is [PARTITION:]OPTIONS ..., words split at white
// space and each at ':' (strv_split_colon_pairs).
func parseRootImageOptions(key, v string) (Property, error) {
	pairs := []stringPair{}
	words, err := imageTuples(v)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	for _, w := range words {
		first, second, err := colonPair(w)
		if err != nil {
			return Property{}, fmt.Errorf("%q: %v", w, err)
		}
		if second == "" {
			first, second = "root", first
		}
		pairs = append(pairs, stringPair{first, second})
	}
	return prop(key, pairs), nil
}

// colonPair is one step of strv_split_colon_pairs: A or A:B, with escaped
// colons.
func colonPair(w string) (string, string, error) {
	c := cursor{s: w}
	first, _, err := c.extractWord(":", xCunescape|xUnescapeSeparators)
	if err != nil {
		return "", "", err
	}
	second, _, err := c.extractWord(":", xCunescape|xUnescapeSeparators)
	if err != nil {
		return "", "", err
	}
	if _, more := c.rest(); more {
		return "", "", errors.New("more than two fields")
	}
	return first, second, nil
}

// An image is a D-Bus (ssba(ss)) of MountImages: source, destination,
// whether a missing source is ignored, and mount options by partition.
type image struct {
	Source, Dest string
	Ignore       bool
	Options      []stringPair
}

// An extension is a D-Bus (sba(ss)) of ExtensionImages.
type extension struct {
	Source  string
	Ignore  bool
	Options []stringPair
}

// imageTuple parses [-]SOURCE[:FIELD...] and the mount options that follow
// the fields it takes.
func imageTuple(tuple string, fields int) (parts []string, ignore bool, opts []stringPair, err error) {
	c := cursor{s: tuple}
	for range fields {
		w, _, err := c.extractWord(":", xCunescape|xUnescapeSeparators)
		if err != nil {
			return nil, false, nil, err
		}
		parts = append(parts, w)
	}
	parts[0], ignore = strings.CutPrefix(parts[0], "-")
	opts = []stringPair{}
	for {
		partition, ok, err := c.extractWord(":", xCunescape|xUnescapeSeparators)
		if err != nil {
			return nil, false, nil, err
		}
		if !ok {
			break
		}
		o, ok, err := c.extractWord(":", xCunescape|xUnescapeSeparators)
		if err != nil {
			return nil, false, nil, err
		}
		if !ok {
			opts = append(opts, stringPair{"root", partition})
			break
		}
		opts = append(opts, stringPair{partition, o})
	}
	return parts, ignore, opts, nil
}

func imageTuples(v string) ([]string, error) {
	return allWords(v, whitespace, xUnquote|xRetainEscape)
}

func parseMountImages(key, v string) (Property, error) {
	tuples, err := imageTuples(v)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	images := []image{}
	for _, t := range tuples {
		parts, ignore, opts, err := imageTuple(t, 2)
		if err != nil {
			return Property{}, fmt.Errorf("%q: %v", t, err)
		}
		if parts[0] == "" && !ignore && parts[1] == "" {
			continue
		}
		if parts[1] == "" {
			return Property{}, fmt.Errorf("%q: missing the destination after ':'", t)
		}
		images = append(images, image{parts[0], parts[1], ignore, opts})
	}
	return prop(key, images), nil
}

func parseExtensionImages(key, v string) (Property, error) {
	tuples, err := imageTuples(v)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	exts := []extension{}
	for _, t := range tuples {
		parts, ignore, opts, err := imageTuple(t, 1)
		if err != nil {
			return Property{}, fmt.Errorf("%q: %v", t, err)
		}
		exts = append(exts, extension{parts[0], ignore, opts})
	}
	return prop(key, exts), nil
}

// A symlink is a D-Bus (sst) of the *DirectorySymlink properties.
type symlink struct {
	Source, Dest string
	Flags        uint64
}

// parseDirectories is NAME[:LINK] ...: names go to the setting itself,
// names with a symlink to NAMESymlink.
func parseDirectories(key, v string) ([]Property, error) {
	words, err := splitWords(v, false)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", v, err)
	}
	var names []string
	var links []symlink
	for _, w := range words {
		c := cursor{s: w}
		src, ok, err := c.extractWord(":", xUnquote|xDontCoalesce)
		if err != nil || !ok {
			return nil, fmt.Errorf("%q is not NAME or NAME:LINK", w)
		}
		dst, _, err := c.extractWord(":", xUnquote|xDontCoalesce)
		if err != nil {
			return nil, fmt.Errorf("%q is not NAME or NAME:LINK", w)
		}
		for _, d := range []string{src, dst} {
			if strings.HasPrefix(d, "/") || slices.Contains(strings.Split(d, "/"), "..") {
				return nil, fmt.Errorf("%q: %q must be a path relative to the manager's directory for %s, with no \"..\" in it", w, d, key)
			}
		}

		if dst == "" {
			names = append(names, simplifyPath(src))
		} else {
			links = append(links, symlink{simplifyPath(src), simplifyPath(dst), 0})
		}
	}
	var ps []Property
	if len(names) > 0 {
		ps = append(ps, prop(key, names))
	}
	if len(links) > 0 {
		ps = append(ps, prop(key+"Symlink", links))
	}
	return ps, nil
}

// parseTimeoutSec sets TimeoutStartSec and TimeoutStopSec.
func parseTimeoutSec(_, v string) ([]Property, error) {
	start, err := parseSecProperty("TimeoutStartSec", v)
	if err != nil {
		return nil, err
	}
	stop, _ := parseSecProperty("TimeoutStopSec", v)
	return []Property{start, stop}, nil
}

// An ExecCommandEx is one command of an Exec*Ex= property, (sasas): the
// path, the argv and the flags as words (ignore-failure, no-env-expand,
// privileged, no-setuid, ambient).
type ExecCommandEx struct {
	Path  string
	Args  []string
	Flags []string
}

// execPrefixes are the prefixes of a command line in systemd.service(5).
type execPrefixes struct {
	ignore     bool // '-': failure is ignored
	explicit   bool // '@': the first word is the path, the second argv[0]
	noEnv      bool // ':': no environment variable expansion
	privileged bool // '+'
	noSetuid   bool // '!'
	ambient    bool // '!!'
}

// cutExecPrefixes returns the prefixes that begin v, as systemd reads
// them (each at most once, '+' not with '!'), and the rest of v.
func cutExecPrefixes(v string) (execPrefixes, string) {
	var p execPrefixes
	for ; v != ""; v = v[1:] {
		switch v[0] {
		case '-':
			if p.ignore {
				return p, v
			}
			p.ignore = true
		case '@':
			if p.explicit {
				return p, v
			}
			p.explicit = true
		case ':':
			if p.noEnv {
				return p, v
			}
			p.noEnv = true
		case '+':
			if p.privileged || p.noSetuid || p.ambient {
				return p, v
			}
			p.privileged = true
		case '!':
			switch {
			case p.privileged || p.ambient:
				return p, v
			case p.noSetuid:
				p.noSetuid, p.ambient = false, true
			default:
				p.noSetuid = true
			}
		default:
			return p, v
		}
	}
	return p, v
}

// flags returns the prefixes that the Ex form carries, as its flag names.
func (p execPrefixes) flags() []string {
	flags := []string{}
	for _, f := range []struct {
		set  bool
		name string
	}{{p.ignore, "ignore-failure"}, {p.privileged, "privileged"}, {p.noSetuid, "no-setuid"}, {p.ambient, "ambient"}, {p.noEnv, "no-env-expand"}} {
		if f.set {
			flags = append(flags, f.name)
		}
	}
	return flags
}

// parseExecCommand is a command line with the prefixes of systemd.service(5):
// '-' ignores failure, '@' gives argv[0], ':' '+' '!' '!!' need the Ex
// form, to which the setting is then renamed.
func parseExecCommand(key, v string) (Property, error) {
	p, v := cutExecPrefixes(v)
	ex := strings.HasSuffix(key, "Ex")
	name := key
	if !ex && (p.noEnv || p.privileged || p.noSetuid || p.ambient) {
		ex, name = true, key+"Ex"
	}
	c := cursor{s: v}
	var execPath string
	if p.explicit {
		w, _, err := c.extractWord(whitespace, xUnquote|xCunescape)
		if err != nil {
			return Property{}, fmt.Errorf("%q: %v", v, err)
		}
		execPath = w
	}
	rest, _ := c.rest()
	if !p.explicit {
		rest = v
	}
	argv, err := splitWords(rest, true)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	if execPath == "" && len(argv) > 0 {
		execPath = argv[0]
	}
	if !ex {
		cmds := []ExecCommand{}
		if len(argv) > 0 {
			cmds = append(cmds, ExecCommand{execPath, argv, p.ignore})
		}
		return prop(name, cmds), nil
	}
	cmds := []ExecCommandEx{}
	if len(argv) > 0 {
		cmds = append(cmds, ExecCommandEx{execPath, argv, p.flags()})
	}
	return prop(name, cmds), nil
}

// An exitStatusSet is a D-Bus (aiai): exit statuses and signals.
type exitStatusSet struct {
	Statuses, Signals []int32
}

// parseExitStatusSet is a list of exit statuses (numbers or names such as
// INVALIDARGUMENT) and signals.
func parseExitStatusSet(key, v string) (Property, error) {
	words, err := splitWords(v, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	set := exitStatusSet{[]int32{}, []int32{}}
	for _, w := range words {
		if n, ok := exitStatusFromString(w); ok {
			set.Statuses = append(set.Statuses, n)
		} else if sig, err := signalFromString(w); err == nil {
			set.Signals = append(set.Signals, sig)
		} else {
			return Property{}, fmt.Errorf("%q is neither an exit status (0..255 or a name such as INVALIDARGUMENT) nor a signal", w)
		}
	}
	return prop(key, set), nil
}

func exitStatusFromString(s string) (int32, bool) {
	for n, name := range exitStatuses {
		if name != "" && name == s {
			return int32(n), true
		}
	}
	n, err := safeAtou(s, 0, 8, false)
	return int32(n), err == nil
}

// A condition is a D-Bus (sbbs): its type, whether it triggers ('|'),
// whether it is negated ('!'), and its parameter.
type condition struct {
	Type            string
	Trigger, Negate bool
	Parameter       string
}

// parseCondition sends a Condition*= or Assert*= as the list property
// Conditions or Asserts; empty resets it.
func parseCondition(list string) func(key, v string) (Property, error) {
	return func(key, v string) (Property, error) {
		if v == "" {
			return prop(list, []condition{}), nil
		}
		p, trigger := strings.CutPrefix(v, "|")
		p, negate := strings.CutPrefix(p, "!")
		return prop(list, []condition{{key, trigger, negate, p}}), nil
	}
}

// parseDeviceAllow is PATH [rwm].
func parseDeviceAllow(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []stringPair{}), nil
	}
	p, rwm, _ := strings.Cut(v, " ")
	return prop(key, []stringPair{{p, rwm}}), nil
}

// A pathValue is a D-Bus (st).
type pathValue struct {
	Path  string
	Value uint64
}

// pathAndValue splits "PATH VALUE" at its first space.
func pathAndValue(v string) (string, string, error) {
	p, value, ok := strings.Cut(v, " ")
	if !ok {
		return "", "", fmt.Errorf("%q is not PATH VALUE", v)
	}
	return p, value, nil
}

// parseIOLimit is PATH BYTES (a size in powers of 1000, or infinity).
func parseIOLimit(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []pathValue{}), nil
	}
	p, limit, err := pathAndValue(v)
	if err != nil {
		return Property{}, err
	}
	n := uint64(Infinity)
	if limit != "infinity" {
		if n, err = parseSizeBase(limit, 1000); err != nil {
			return Property{}, fmt.Errorf("%q is not a size (such as 1000, 5M, 1.5G) or infinity", limit)
		}
	}
	return prop(key, []pathValue{{p, n}}), nil
}

func parseDeviceWeight(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []pathValue{}), nil
	}
	p, weight, err := pathAndValue(v)
	if err != nil {
		return Property{}, err
	}
	n, err := safeAtou(weight, 0, 64, false)
	if err != nil {
		return Property{}, fmt.Errorf("%q is not a weight", weight)
	}
	return prop(key, []pathValue{{p, n}}), nil
}

func parseDeviceLatency(_, v string) (Property, error) {
	const name = "IODeviceLatencyTargetUSec"
	if v == "" {
		return Property{}, errors.New("empty: want PATH TIME")
	}
	p, target, err := pathAndValue(v)
	if err != nil {
		return Property{}, err
	}
	usec, err := parseSec(target)
	if err != nil {
		return Property{}, spanError("target", target, err)
	}
	return prop(name, []pathValue{{p, usec}}), nil
}

// An ipPrefix is a D-Bus (iayu): address family, address and prefix
// length.
type ipPrefix struct {
	Family int32
	Addr   []byte
	Len    uint32
}

const (
	afInet  = 2
	afInet6 = 10
)

// parseIPAccess is any, localhost, link-local, multicast, or addresses
// with an optional /LENGTH.
func parseIPAccess(key, v string) (Property, error) {
	shortcuts := map[string][]string{
		"any":        {"0.0.0.0/0", "::/0"},
		"localhost":  {"127.0.0.0/8", "::1/128"},
		"link-local": {"169.254.0.0/16", "fe80::/64"},
		"multicast":  {"224.0.0.0/4", "ff00::/8"},
	}
	words, ok := shortcuts[v]
	if !ok {
		var err error
		if words, err = allWords(v, whitespace, 0); err != nil {
			return Property{}, fmt.Errorf("%q: %v", v, err)
		}
	}
	prefixes := []ipPrefix{}
	for _, w := range words {
		p, err := parseIPPrefix(w)
		if err != nil {
			return Property{}, err
		}
		prefixes = append(prefixes, p)
	}
	return prop(key, prefixes), nil
}

func parseIPPrefix(w string) (ipPrefix, error) {
	addr, length, hasLen := strings.Cut(w, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return ipPrefix{}, fmt.Errorf("%q is not an IP address with an optional /LENGTH", w)
	}
	p := ipPrefix{Family: afInet6, Addr: a.AsSlice(), Len: uint32(a.BitLen())}
	if a.Is4() {
		p.Family = afInet
	}
	if hasLen {
		n, err := safeAtou(length, 10, 8, true)
		if err != nil || n > uint64(a.BitLen()) {
			return ipPrefix{}, fmt.Errorf("%q: prefix length %q is not in 0..%d", w, length, a.BitLen())
		}
		p.Len = uint32(n)
	}
	return p, nil
}

// parseOptionalPath sends a list of the one path, or an empty list.
func parseOptionalPath(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []string{}), nil
	}
	return prop(key, []string{v}), nil
}

// parseBPFProgram is TYPE:PATH.
func parseBPFProgram(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []stringPair{}), nil
	}
	c := cursor{s: v}
	typ, _, err := c.extractWord(":", 0)
	if err != nil {
		return Property{}, fmt.Errorf("%q: %v", v, err)
	}
	p, _ := c.rest()
	return prop(key, []stringPair{{typ, p}}), nil
}

// A socketBind is a D-Bus (iiqq): address family, IP protocol, number of
// ports and first port.
type socketBind struct {
	Family, Protocol int32
	Ports, First     uint16
}

// parseSocketBind is [ipv4|ipv6:][tcp|udp:](any|PORT|PORT-PORT).
func parseSocketBind(key, v string) (Property, error) {
	if v == "" {
		return prop(key, []socketBind{}), nil
	}
	bad := fmt.Errorf("%q is not [ipv4|ipv6:][tcp|udp:]any|PORT|PORT-PORT", v)
	var b socketBind
	c := cursor{s: v}
	step := 0
	for {
		tok, ok, err := c.extractWord(":", xDontCoalesce)
		if err != nil || tok == "" && ok {
			return Property{}, bad
		}
		if !ok {
			break
		}
		parsed := false
		for ; step < 3 && !parsed; step++ {
			switch step {
			case 0:
				switch tok {
				case "ipv4":
					b.Family, parsed = afInet, true
				case "ipv6":
					b.Family, parsed = afInet6, true
				}
			case 1:
				switch tok {
				case "tcp":
					b.Protocol, parsed = 6, true
				case "udp":
					b.Protocol, parsed = 17, true
				}
			case 2:
				if tok == "any" {
					parsed = true
					break
				}
				lo, hi, err := parseRange(tok)
				if err == nil && lo > 0 && lo <= 65535 && hi > 0 && hi <= 65535 && hi >= lo {
					b.Ports, b.First, parsed = uint16(hi-lo+1), uint16(lo), true
				}
			}
		}
		if !parsed {
			return Property{}, bad
		}
		if step == 3 {
			break
		}
	}
	if _, more := c.rest(); more {
		return Property{}, bad
	}
	return prop(key, []socketBind{b}), nil
}
