package unit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/godbus/dbus/v5"
)

// MaxNameLen is the length in bytes of the longest unit name systemd
// accepts.
const MaxNameLen = 255

// MaxPrefixLen is the length of the longest prefix ValidatePrefix accepts:
// RandomName(prefix, suffix) then fits in MaxNameLen for every unit type,
// "automount" being the longest.
const MaxPrefixLen = MaxNameLen - 16 - len(".automount")

// unitTypes are the unit type suffixes systemd 252 knows.
var unitTypes = []string{
	"service", "socket", "target", "slice", "scope", "timer", "path",
	"mount", "automount", "swap", "device",
}

// nameChars are the characters besides ASCII letters and digits that a
// unit name may contain; '@' separates a template's prefix from an instance.
const nameChars = ":-_.\\"

func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte(nameChars, c) >= 0
}

// Validate reports whether name is a unit name systemd accepts: at most
// MaxNameLen bytes; a type suffix (".service", ".socket", ".target",
// ".slice", ".scope", ".timer", ".path", ".mount", ".automount", ".swap" or
// ".device") after a non-empty stem; a stem of ASCII letters, digits and
// ":-_.\"; and optionally one '@' after a non-empty prefix, which makes the
// name a template ("getty@.service") or, followed by an instance, an
// instance name ("getty@tty1.service").
//
// Validate is stricter than systemd in one respect: systemd accepts further
// '@' characters inside an instance; Validate does not (Escape never
// produces them).
func Validate(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("unit name %q: empty", name)
	case len(name) > MaxNameLen:
		return fmt.Errorf("unit name %q: %d bytes long (max %d)", name, len(name), MaxNameLen)
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return fmt.Errorf("unit name %q: no type suffix (want one of %s)", name, typeList())
	}
	if !isUnitType(name[dot+1:]) {
		return fmt.Errorf("unit name %q: unknown type suffix %q (want one of %s)", name, name[dot:], typeList())
	}
	stem := name[:dot]
	if stem == "" {
		return fmt.Errorf("unit name %q: empty name before the type suffix", name)
	}
	for i := 0; i < len(stem); i++ {
		if c := stem[i]; !isNameChar(c) && c != '@' {
			return fmt.Errorf("unit name %q: %s not allowed (allowed: ASCII letters, digits, %q)", name, describeChar(stem, i), nameChars+"@")
		}
	}
	switch at := strings.IndexByte(stem, '@'); {
	case at == 0:
		return fmt.Errorf("unit name %q: empty prefix before '@'", name)
	case at > 0 && strings.IndexByte(stem[at+1:], '@') >= 0:
		return fmt.Errorf("unit name %q: more than one '@'", name)
	}
	return nil
}

// Complete returns the unit that name stands for where a command takes a
// unit name, by systemctl's suffix rule: name itself if it ends in a unit
// type suffix (".service", ".timer", ...), else name with ".service"
// added, so that "pivot" is "pivot.service" and "foo.bar" is
// "foo.bar.service". The result must pass Validate and be no template
// ("getty@.service"): a template is no unit that can be started, run or
// waited for, only its instances ("getty@tty1.service") are. Unlike
// systemctl, Complete escapes nothing: a character systemd does not
// allow is an error.
func Complete(name string) (string, error) {
	if dot := strings.LastIndexByte(name, '.'); dot < 0 || !isUnitType(name[dot+1:]) {
		name += ".service"
	}
	if err := Validate(name); err != nil {
		return "", err
	}
	if isTemplate(name) {
		dot := strings.LastIndexByte(name, '.')
		return "", fmt.Errorf("unit name %q: a template, not a unit: name an instance, such as %q", name, name[:dot]+"NAME"+name[dot:])
	}
	return name, nil
}

// isTemplate reports whether the valid unit name n is a template, such as
// "getty@.service".
func isTemplate(n string) bool {
	return strings.HasSuffix(n[:strings.LastIndexByte(n, '.')], "@")
}

func isUnitType(s string) bool {
	for _, t := range unitTypes {
		if s == t {
			return true
		}
	}
	return false
}

func typeList() string { return "." + strings.Join(unitTypes, " .") }

// describeChar names the character at s[i] for an error message: the rune
// if s holds valid UTF-8 there, else the byte.
func describeChar(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("byte 0x%02x", s[i])
	}
	return "character " + strconv.QuoteRune(r)
}

// ValidatePrefix reports whether prefix can start names made by
// RandomName: it may be empty, may hold only ASCII letters, digits and
// ":-_.\" (no '@'), and may be at most MaxPrefixLen bytes long.
func ValidatePrefix(prefix string) error {
	if len(prefix) > MaxPrefixLen {
		return fmt.Errorf("unit name prefix %q: %d bytes long (max %d, so that a random name fits in %d)", prefix, len(prefix), MaxPrefixLen, MaxNameLen)
	}
	for i := 0; i < len(prefix); i++ {
		if !isNameChar(prefix[i]) {
			return fmt.Errorf("unit name prefix %q: %s not allowed (allowed: ASCII letters, digits, %q)", prefix, describeChar(prefix, i), nameChars)
		}
	}
	return nil
}

// RandomName returns prefix, 16 lowercase hexadecimal digits from
// crypto/rand, a dot and suffix: RandomName("unitrun-", "service") is, for
// example, "unitrun-3f2a9c1b0d4e5f67.service". It does not check its
// arguments; see ValidatePrefix.
func RandomName(prefix, suffix string) string {
	var b [8]byte
	rand.Read(b[:]) // never fails: crypto/rand.Read aborts the program instead
	return prefix + hex.EncodeToString(b[:]) + "." + suffix
}

// Escape escapes s for use in a unit name exactly as "systemd-escape s"
// does: '/' becomes '-', and every byte other than an ASCII letter, digit,
// ':', '_' or '.' becomes \xNN (two lowercase hex digits), as does a
// leading '.'. Escape works on bytes, so any string, valid UTF-8 or not,
// can be escaped, and Unescape(Escape(s)) == s. A NUL byte, which cannot
// reach systemd, is escaped as \x00.
func Escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c == '-' || c == '\\' || !isNameChar(c) || (c == '.' && i == 0):
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

const hexDigits = "0123456789abcdef"

// EscapePath escapes the file system path p exactly as
// "systemd-escape --path p" does: p is simplified (repeated slashes and "."
// components dropped), the root and the empty path become "-", and
// otherwise the leading and trailing slashes are removed and the rest is
// escaped with Escape. Relative paths are escaped like absolute ones, as
// systemd-escape does (with a warning).
//
// systemd-escape --path refuses a path that is not normalized after
// simplification: one with a ".." component, a component longer than 255
// bytes, or 4096 bytes or more, or the path ".". For such paths EscapePath
// returns the escaping of the simplified path, which systemd never
// produces.
func EscapePath(p string) string {
	p = simplifyPath(p)
	if p == "" || p == "/" {
		return "-"
	}
	return Escape(strings.Trim(p, "/"))
}

// simplifyPath is systemd 252's path_simplify: it drops repeated slashes,
// "." components and trailing slashes, keeps ".." components, and stops
// simplifying at a component longer than 255 bytes.
func simplifyPath(p string) string {
	if p == "" {
		return p
	}
	var b strings.Builder
	rest := p
	if p[0] == '/' {
		b.WriteByte('/')
		rest = p[1:]
	}
	first := true
	for {
		comp, next, ok := firstComponent(rest)
		if ok && comp == "" {
			break
		}
		if !first {
			b.WriteByte('/')
		}
		if !ok {
			b.WriteString(rest)
			return b.String()
		}
		b.WriteString(comp)
		rest, first = next, false
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

// firstComponent is systemd's path_find_first_component: it returns the
// first component of p and what follows it, skipping slashes and "."
// components before and after; comp is "" if there is none. ok is false if
// the component is longer than 255 bytes.
func firstComponent(p string) (comp, next string, ok bool) {
	first := skipSlashOrDot(p)
	if first == "" || first == "." {
		return "", "", true
	}
	end := strings.IndexByte(first, '/')
	if end < 0 {
		end = len(first)
	}
	if end > 255 {
		return "", p, false
	}
	next = skipSlashOrDot(first[end:])
	if next == "." {
		next = ""
	}
	return first[:end], next, true
}

func skipSlashOrDot(p string) string {
	for p != "" && (p[0] == '/' || strings.HasPrefix(p, "./")) {
		p = p[1:]
	}
	return p
}

// Unescape reverses Escape exactly as "systemd-escape --unescape s" does:
// '-' becomes '/' and \xNN (hex digits in either case) becomes the byte NN;
// every other byte stands for itself. It fails if a backslash is not
// followed by 'x' and two hex digits. It decodes \x00 to a NUL byte, where
// systemd's C string would end.
func Unescape(s string) (string, error) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '-':
			b.WriteByte('/')
		case '\\':
			if i+3 >= len(s) || s[i+1] != 'x' || digitValue(s[i+2]) >= 16 || digitValue(s[i+3]) >= 16 {
				return "", fmt.Errorf(`unescape %q: '\' at byte %d not followed by 'x' and two hex digits`, s, i)
			}
			b.WriteByte(byte(digitValue(s[i+2])<<4 | digitValue(s[i+3])))
			i += 3
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// BusPath returns the D-Bus object path of the unit called name on the
// systemd manager: "/org/freedesktop/systemd1/unit/" followed by name with
// every byte other than an ASCII letter or (not first) digit written as _xx
// (two lowercase hex digits); an empty name is written as "_".
func BusPath(name string) dbus.ObjectPath {
	const base = "/org/freedesktop/systemd1/unit/"
	if name == "" {
		return base + "_"
	}
	var b strings.Builder
	b.WriteString(base)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return dbus.ObjectPath(b.String())
}
