package unit

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/unitrun/unitrun/unit/exit"
)

// Infinity is the value systemd uses for an unlimited time span (in
// microseconds), size or count: the largest uint64.
const Infinity = math.MaxUint64

// errSyntax and errRange are the two ways systemd's number parsers fail:
// EINVAL and ERANGE.
var (
	errSyntax = errors.New("invalid syntax")
	errRange  = errors.New("out of range")
)

// whitespace is systemd's WHITESPACE: the characters its parsers skip and
// split on.
const whitespace = " \t\n\r"

func isWhitespace(c byte) bool { return strings.IndexByte(whitespace, c) >= 0 }

func trimLeftWhitespace(s string) string { return strings.TrimLeft(s, whitespace) }

// ParseTimeSpan parses a time span in the syntax of systemd.time(7), as
// systemd's parse_sec does: a sequence of numbers, each with an optional
// fraction and an optional unit (us, ms, s, min, h, d, w, M, y and their
// long forms; seconds when omitted), summed, as in "5", "5s", "1min 30s",
// "250ms", "1.5h". The word "infinity" yields time.Duration(math.MaxInt64).
// The result has microsecond resolution, as in systemd; a finite span longer
// than the largest Duration is an error.
func ParseTimeSpan(s string) (time.Duration, error) {
	usec, err := parseSec(s)
	if err != nil {
		return 0, spanError("time span", s, err)
	}
	if usec == Infinity {
		return time.Duration(math.MaxInt64), nil
	}
	if usec > math.MaxInt64/1000 {
		return 0, fmt.Errorf("time span %q: longer than the largest time.Duration", s)
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// ParseSize parses a size in bytes as systemd's parse_size does with base
// 1024: a number with an optional fraction and an optional suffix B, K, M,
// G, T, P or E (powers of 1024), as in "512", "100K", "1.5G"; several terms
// in falling order of suffix are summed ("1G 512M"). The word "infinity" is
// not a size; ParseProperty accepts it where systemd does.
func ParseSize(s string) (uint64, error) {
	n, err := parseSize(s)
	if err != nil {
		return 0, sizeError("size", s, err)
	}
	return n, nil
}

// spanError and sizeError describe a failure of parseSec or parseSize for
// the named field.
func spanError(field, s string, err error) error {
	if err == errRange {
		return fmt.Errorf("%s %q: out of range", field, s)
	}
	return fmt.Errorf("%s %q: not a time span (examples: 5, 5s, 1min 30s, 250ms, infinity)", field, s)
}

func sizeError(field, s string, err error) error {
	if err == errRange {
		return fmt.Errorf("%s %q: out of range", field, s)
	}
	return fmt.Errorf("%s %q: not a size (examples: 4096, 100K, 512M, 1.5G)", field, s)
}

// A timeUnit is a suffix of a time span and the span it stands for.
type timeUnit struct {
	suffix string
	usec   uint64
}

// timeUnits is the suffix table of systemd 252's parse_time, in the order
// it is searched (the first prefix that matches wins).
var timeUnits = []timeUnit{
	{"seconds", 1e6}, {"second", 1e6}, {"sec", 1e6}, {"s", 1e6},
	{"minutes", 60e6}, {"minute", 60e6}, {"min", 60e6},
	{"months", 2629800e6}, {"month", 2629800e6}, {"M", 2629800e6},
	{"msec", 1e3}, {"ms", 1e3}, {"m", 60e6},
	{"hours", 3600e6}, {"hour", 3600e6}, {"hr", 3600e6}, {"h", 3600e6},
	{"days", 86400e6}, {"day", 86400e6}, {"d", 86400e6},
	{"weeks", 604800e6}, {"week", 604800e6}, {"w", 604800e6},
	{"years", 31557600e6}, {"year", 31557600e6}, {"y", 31557600e6},
	{"usec", 1}, {"us", 1}, {"μs", 1}, {"µs", 1}, // U+03BC GREEK SMALL LETTER MU, U+00B5 MICRO SIGN
}

// parseSec is systemd's parse_sec: a time span in microseconds.
func parseSec(t string) (uint64, error) { return parseTime(t, 1e6, timeUnits) }

// parseTime is systemd's parse_time, and parse_nsec with the units of
// nanoseconds: a time span in the units of the table, a number without a
// unit counting defaultUnit.
func parseTime(t string, defaultUnit uint64, units []timeUnit) (uint64, error) {
	p := trimLeftWhitespace(t)
	if rest, ok := strings.CutPrefix(p, "infinity"); ok {
		if trimLeftWhitespace(rest) != "" {
			return 0, errSyntax
		}
		return Infinity, nil
	}
	var usec uint64
	something := false
	for {
		p = trimLeftWhitespace(p)
		if p == "" {
			if !something {
				return 0, errSyntax
			}
			return usec, nil
		}
		if p[0] == '-' {
			return 0, errRange
		}
		l, e, err := strtoll(p, 10)
		if err != nil {
			return 0, err
		}
		if l < 0 {
			return 0, errRange
		}
		// frac is the digits after a '.', rest what follows the number.
		rest := p[e:]
		frac, hasDot := "", strings.HasPrefix(rest, ".")
		if hasDot {
			rest = rest[1:]
			frac = rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
			rest = rest[len(frac):]
		} else if e == 0 {
			return 0, errSyntax
		}
		multiplier, s := defaultUnit, trimLeftWhitespace(rest)
		for _, u := range units {
			if after, ok := strings.CutPrefix(s, u.suffix); ok {
				multiplier, s = u.usec, after
				break
			}
		}
		if len(s) == len(rest) && s != "" { // neither white space nor a unit follows
			return 0, errSyntax
		}
		p = s
		if uint64(l) >= Infinity/multiplier {
			return 0, errRange
		}
		k := uint64(l) * multiplier
		if k >= Infinity-usec {
			return 0, errRange
		}
		usec += k
		something = true
		if hasDot {
			m := multiplier / 10
			for i := 0; i < len(frac); i++ {
				k := uint64(frac[i]-'0') * m
				if k >= Infinity-usec {
					return 0, errRange
				}
				usec += k
				m /= 10
			}
			if frac == "" {
				return 0, errSyntax
			}
		}
	}
}

// sizeUnits is the base-1024 suffix table of systemd's parse_size, searched
// in order from the position after the previous term's suffix.
var sizeUnits = []struct {
	suffix string
	factor uint64
}{
	{"E", 1 << 60}, {"P", 1 << 50}, {"T", 1 << 40}, {"G", 1 << 30},
	{"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}, {"", 1},
}

// sizeUnits1000 is the suffix table of parse_size with base 1000.
var sizeUnits1000 = []struct {
	suffix string
	factor uint64
}{
	{"E", 1e18}, {"P", 1e15}, {"T", 1e12}, {"G", 1e9},
	{"M", 1e6}, {"K", 1e3}, {"B", 1}, {"", 1},
}

// parseSize is systemd's parse_size with base 1024.
func parseSize(t string) (uint64, error) { return parseSizeBase(t, 1024) }

// parseSizeBase is systemd's parse_size with base 1024 or 1000.
func parseSizeBase(t string, base int) (uint64, error) {
	sizeUnits := sizeUnits
	if base == 1000 {
		sizeUnits = sizeUnits1000
	}
	var r uint64
	start := 0
	p := t
	for {
		p = trimLeftWhitespace(p)
		l, e, err := strtoull(p, 10)
		if err != nil {
			return 0, err
		}
		if e == 0 {
			return 0, errSyntax
		}
		if p[0] == '-' {
			return 0, errRange
		}
		rest := p[e:]
		frac := 0.0
		if strings.HasPrefix(rest, ".") {
			rest = rest[1:]
			if rest != "" && rest[0] >= '0' && rest[0] <= '9' {
				l2, e2, err := strtoull(rest, 10)
				if err != nil {
					return 0, err
				}
				frac = float64(l2)
				for range e2 {
					frac /= 10
				}
				rest = rest[e2:]
			}
		}
		rest = trimLeftWhitespace(rest)
		i := start
		for ; i < len(sizeUnits); i++ {
			if strings.HasPrefix(rest, sizeUnits[i].suffix) {
				break
			}
		}
		if i >= len(sizeUnits) {
			return 0, errSyntax
		}
		factor := sizeUnits[i].factor
		var up uint64
		if frac > 0 {
			up = 1
		}
		if l+up > math.MaxUint64/factor {
			return 0, errRange
		}
		tmp := l*factor + uint64(frac*float64(factor))
		if tmp > math.MaxUint64-r {
			return 0, errRange
		}
		r += tmp
		p = rest[len(sizeUnits[i].suffix):]
		start = i + 1
		if p == "" {
			return r, nil
		}
	}
}

// parseBoolean is systemd's parse_boolean: 1, yes, y, true, t, on and 0,
// no, n, false, f, off, in any case.
func parseBoolean(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "1", "yes", "y", "true", "t", "on":
		return true, nil
	case "0", "no", "n", "false", "f", "off":
		return false, nil
	}
	return false, errSyntax
}

// The functions below reproduce the C library and systemd number parsers
// that systemd's property parsers are built on, quirks included: C's strtol
// skips leading white space (isspace), takes a sign, and with base 0 reads
// "0x1f" as hexadecimal and "017" as octal; systemd adds "0b" and "0o".

func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

func digitValue(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'z':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return uint64(c-'A') + 10
	}
	return 99
}

// strto parses the longest prefix of s that C's strtoul family accepts with
// the given base (0, 2, 8, 10 or 16). It returns the magnitude, whether a
// '-' sign was read, the length of the prefix (0 if there is no number) and
// whether the magnitude overflowed a uint64.
func strto(s string, base int) (mag uint64, neg bool, end int, overflow bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if (base == 0 || base == 16) && i+2 < len(s) && s[i] == '0' && s[i+1]|0x20 == 'x' && digitValue(s[i+2]) < 16 {
		i += 2
		base = 16
	} else if base == 0 {
		base = 10
		if i < len(s) && s[i] == '0' {
			base = 8
		}
	}
	b := uint64(base)
	start := i
	for ; i < len(s); i++ {
		d := digitValue(s[i])
		if d >= b {
			break
		}
		if mag > (math.MaxUint64-d)/b {
			overflow = true
		}
		mag = mag*b + d
	}
	if i == start {
		return 0, false, 0, false
	}
	return mag, neg, i, overflow
}

// strtoll is C's strtoll (long is 64 bits on Linux).
func strtoll(s string, base int) (int64, int, error) {
	mag, neg, end, overflow := strto(s, base)
	if neg {
		if overflow || mag > 1<<63 {
			return math.MinInt64, end, errRange
		}
		return int64(-mag), end, nil
	}
	if overflow || mag > math.MaxInt64 {
		return math.MaxInt64, end, errRange
	}
	return int64(mag), end, nil
}

// strtoull is C's strtoull, which negates a '-' number modulo 2^64.
func strtoull(s string, base int) (uint64, int, error) {
	mag, neg, end, overflow := strto(s, base)
	if overflow {
		return math.MaxUint64, end, errRange
	}
	if neg {
		mag = -mag
	}
	return mag, end, nil
}

// mangleBase is systemd's mangle_base: with base 0, a "0b" or "0o" prefix
// selects base 2 or 8.
func mangleBase(s string, base int) (string, int) {
	if base != 0 {
		return s, base
	}
	if rest, ok := cutPrefixFold(s, "0b"); ok {
		return rest, 2
	}
	if rest, ok := cutPrefixFold(s, "0o"); ok {
		return rest, 8
	}
	return s, 0
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// safeAtoi is systemd's safe_atoi.
func safeAtoi(s string) (int32, error) {
	s, base := mangleBase(trimLeftWhitespace(s), 0)
	v, end, err := strtoll(s, base)
	if err != nil {
		return 0, err
	}
	if end == 0 || end != len(s) {
		return 0, errSyntax
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, errRange
	}
	return int32(v), nil
}

// safeAtou is systemd's safe_atou_full and safe_atou64 for an unsigned
// integer of the given bit size (8, 32 or 64). With refuseSign a leading
// '+' or '-' is a syntax error.
func safeAtou(s string, base, bits int, refuseSign bool) (uint64, error) {
	s = trimLeftWhitespace(s)
	if refuseSign && s != "" && (s[0] == '+' || s[0] == '-') {
		return 0, errSyntax
	}
	s, base = mangleBase(s, base)
	v, end, err := strtoull(s, base)
	if err != nil {
		return 0, err
	}
	if end == 0 || end != len(s) {
		return 0, errSyntax
	}
	if v != 0 && s[0] == '-' {
		return 0, errRange
	}
	if bits < 64 && v>>bits != 0 {
		return 0, errRange
	}
	return v, nil
}

// parsePermyriad is systemd's parse_permyriad_unbounded: "N‱", "N.N‰" or
// "N.NN%", in units of 1/10000.
func parsePermyriad(p string) (int, error) {
	if n, ok := strings.CutSuffix(p, "‱"); ok {
		v, err := safeAtoi(n)
		if err != nil {
			return 0, err
		}
		if v < 0 {
			return 0, errRange
		}
		return int(v), nil
	}
	symbol, scale, places := "%", 100, 2
	if strings.HasSuffix(p, "‰") {
		symbol, scale, places = "‰", 10, 1
	}
	n, ok := strings.CutSuffix(p, symbol)
	if !ok {
		return 0, errSyntax
	}
	q := 0
	if dot := strings.IndexByte(n, '.'); dot >= 0 {
		digits := n[dot+1:]
		if len(digits) == 0 || len(digits) > places {
			return 0, errSyntax
		}
		for i := range places {
			q *= 10
			if i < len(digits) {
				if digits[i] < '0' || digits[i] > '9' {
					return 0, errSyntax
				}
				q += int(digits[i] - '0')
			}
		}
		n = n[:dot]
	}
	v, err := safeAtoi(n)
	if err != nil {
		return 0, err
	}
	if v < 0 || int(v) > (math.MaxInt32-q)/scale {
		return 0, errRange
	}
	return int(v)*scale + q, nil
}

// signalFromString is systemd's signal_from_string: a number 1..64, or a
// name with or without "SIG" (TERM, SIGTERM, RTMIN+3, SIGRTMAX-1).
func signalFromString(s string) (int32, error) {
	if n, err := safeAtoi(s); err == nil {
		if n <= 0 || n >= exit.NSig {
			return 0, errRange
		}
		return n, nil
	}
	s = strings.TrimPrefix(s, "SIG")
	// A name below the real-time signals ("TERM"), not a number ("32").
	if n, ok := exit.SignalNumber(s); ok && n < exit.SigRTMin && (s[0] < '0' || s[0] > '9') {
		return int32(n), nil
	}
	if p, ok := strings.CutPrefix(s, "RTMIN"); ok {
		if p == "" {
			return exit.SigRTMin, nil
		}
		if p[0] != '+' {
			return 0, errSyntax
		}
		n, err := safeAtoi(p)
		if err != nil {
			return 0, err
		}
		if n < 0 || n > exit.SigRTMax-exit.SigRTMin {
			return 0, errRange
		}
		return n + exit.SigRTMin, nil
	}
	if p, ok := strings.CutPrefix(s, "RTMAX"); ok {
		if p == "" {
			return exit.SigRTMax, nil
		}
		if p[0] != '-' {
			return 0, errSyntax
		}
		n, err := safeAtoi(p)
		if err != nil {
			return 0, err
		}
		if n > 0 || n < exit.SigRTMin-exit.SigRTMax {
			return 0, errRange
		}
		return n + exit.SigRTMax, nil
	}
	return 0, errSyntax
}
