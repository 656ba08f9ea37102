package unit

import (
	"regexp"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
)

var validateTests = []struct {
	name string
	err  string // a substring of the error, "" if valid
}{
	{"a.service", ""},
	{"unitrun-3f2a9c1b0d4e5f67.service", ""},
	{"getty@.service", ""},
	{"getty@tty1.service", ""},
	{`dev-disk-by\x2duuid-1234.device`, ""},
	{"a:b_c-d.e.socket", ""},
	{"-.mount", ""},
	{"-.slice", ""},
	{"x.automount", ""},
	{"x.swap", ""},
	{"x.target", ""},
	{"x.timer", ""},
	{"x.path", ""},
	{"x.scope", ""},
	{strings.Repeat("a", 247) + ".service", ""},
	{"a b.service", `unit name "a b.service": character ' ' not allowed (allowed: ASCII letters, digits, ":-_.\\@")`},
	{"", `unit name "": empty`},
	{strings.Repeat("a", 248) + ".service", "256 bytes long (max 255)"},
	{"foo", `no type suffix (want one of .service .socket`},
	{"foo.bar", `unknown type suffix ".bar"`},
	{"foo.Service", `unknown type suffix ".Service"`},
	{"foo.service.", `unknown type suffix "."`},
	{".service", "empty name before the type suffix"},
	{"@x.service", "empty prefix before '@'"},
	{"@.service", "empty prefix before '@'"},
	{"a@b@c.service", "more than one '@'"},
	{"a@@.service", "more than one '@'"},
	{"a/b.service", "character '/' not allowed"},
	{"%h.service", "character '%' not allowed"},
	{"$X.service", "character '$' not allowed"},
	{"a\"b.service", `character '"' not allowed`},
	{"a\nb.service", `character '\n' not allowed`},
	{"a\tb.service", `character '\t' not allowed`},
	{"é.service", "character 'é' not allowed"},
	{"a\xff\xfe.service", "byte 0xff not allowed"},
	{"a\x00.service", `character '\x00' not allowed`},
}

func TestValidate(t *testing.T) {
	for _, tt := range validateTests {
		err := Validate(tt.name)
		if tt.err == "" {
			if err != nil {
				t.Errorf("Validate(%q) = %v, want nil", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Validate(%q) = %v, want an error containing %q", tt.name, err, tt.err)
		}
	}
}

// TestComplete: a name without a unit type suffix gets ".service", as
// systemctl adds it; a name with one is kept; the result is checked as
// Validate does, and a template is refused.
func TestComplete(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		err        string // a substring of the error, "" if valid
	}{
		{"pivot", "pivot.service", ""},
		{"pivot.service", "pivot.service", ""},
		{"foo.bar", "foo.bar.service", ""},
		{"a.b.c", "a.b.c.service", ""},
		{"x.timer", "x.timer", ""},
		{"x.target", "x.target", ""},
		{"getty@tty1", "getty@tty1.service", ""},
		{"getty@tty1.service", "getty@tty1.service", ""},
		{"foo.Service", "foo.Service.service", ""},
		{"foo@.service", "", `unit name "foo@.service": a template, not a unit: name an instance, such as "foo@NAME.service"`},
		{"foo@", "", `unit name "foo@.service": a template`},
		{"foo@.timer", "", `such as "foo@NAME.timer"`},
		{"", "", `unit name ".service": empty name before the type suffix`},
		{"bad/name", "", `unit name "bad/name.service": character '/' not allowed`},
		{"a b.service", "", `character ' ' not allowed`},
		{strings.Repeat("a", 247), strings.Repeat("a", 247) + ".service", ""},
		{strings.Repeat("a", 248), "", "256 bytes long (max 255)"},
	} {
		got, err := Complete(tt.name)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("Complete(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Complete(%q) = %q, %v; want an error containing %q", tt.name, got, err, tt.err)
		}
	}
}

func TestValidatePrefix(t *testing.T) {
	tests := []struct {
		prefix string
		err    string
	}{
		{"", ""},
		{"unitrun-", ""},
		{"mco-", ""},
		{`a:b_c.d\x2d`, ""},
		{strings.Repeat("p", MaxPrefixLen), ""},
		{strings.Repeat("p", MaxPrefixLen+1), "230 bytes long (max 229"},
		{"a@", `character '@' not allowed (allowed: ASCII letters, digits, ":-_.\\")`},
		{"a b", "character ' ' not allowed"},
		{"a/", "character '/' not allowed"},
		{"%i", "character '%' not allowed"},
		{"é", "character 'é' not allowed"},
		{"\xff", "byte 0xff not allowed"},
	}
	for _, tt := range tests {
		err := ValidatePrefix(tt.prefix)
		if tt.err == "" {
			if err != nil {
				t.Errorf("ValidatePrefix(%q) = %v, want nil", tt.prefix, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ValidatePrefix(%q) = %v, want an error containing %q", tt.prefix, err, tt.err)
		}
	}
}

func TestRandomName(t *testing.T) {
	pattern := regexp.MustCompile(`^unitrun-[0-9a-f]{16}\.service$`)
	seen := map[string]bool{}
	for range 1000 {
		n := RandomName("unitrun-", "service")
		if !pattern.MatchString(n) {
			t.Fatalf("RandomName = %q, want a match for %s", n, pattern)
		}
		if seen[n] {
			t.Fatalf("RandomName returned %q twice", n)
		}
		seen[n] = true
	}
	// The longest valid prefix with the longest suffix still makes a valid name.
	for _, typ := range unitTypes {
		n := RandomName(strings.Repeat("p", MaxPrefixLen), typ)
		if err := Validate(n); err != nil {
			t.Errorf("Validate(RandomName(longest prefix, %q)) = %v", typ, err)
		}
	}
	if n := RandomName("", "scope"); Validate(n) != nil || len(n) != 16+len(".scope") {
		t.Errorf("RandomName(\"\", \"scope\") = %q", n)
	}
}

// escapeTests are checked here and against systemd-escape in systemd_test.go.
var escapeTests = []struct{ in, out string }{
	{"", ""},
	{"foo", "foo"},
	{"a/b/c", "a-b-c"},
	{"/leading/and/trailing/", "-leading-and-trailing-"},
	{"a-b", `a\x2db`},
	{".hidden", `\x2ehidden`},
	{"a.b", "a.b"},
	{"..", `\x2e.`},
	{"a b", `a\x20b`},
	{`back\slash`, `back\x5cslash`},
	{`"q'`, `\x22q\x27`},
	{"%h%%", `\x25h\x25\x25`},
	{"$VAR ${VAR}", `\x24VAR\x20\x24\x7bVAR\x7d`},
	{"new\nline\ttab", `new\x0aline\x09tab`},
	{"é", `\xc3\xa9`},
	{"日本", `\xe6\x97\xa5\xe6\x9c\xac`},
	{"\xff\xfe", `\xff\xfe`},
	{"a:b_c@d", `a:b_c\x40d`},
	{"\x7f~", `\x7f\x7e`},
}

func TestEscape(t *testing.T) {
	for _, tt := range escapeTests {
		if got := Escape(tt.in); got != tt.out {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.out)
		}
		if got, err := Unescape(tt.out); err != nil || got != tt.in {
			t.Errorf("Unescape(%q) = %q, %v, want %q", tt.out, got, err, tt.in)
		}
	}
	if got := Escape("a\x00b"); got != `a\x00b` {
		t.Errorf(`Escape("a\x00b") = %q, want a\x00b`, got)
	}
}

// escapePathTests are checked here and against systemd-escape --path in
// systemd_test.go; ok is false for paths systemd-escape refuses.
var escapePathTests = []struct {
	in, out string
	ok      bool
}{
	{"/", "-", true},
	{"", "-", true},
	{"//", "-", true},
	{"/a", "a", true},
	{"/a/b", "a-b", true},
	{"/a/b/", "a-b", true},
	{"//a//b//", "a-b", true},
	{"/a/./b/.", "a-b", true},
	{"/./a", "a", true},
	{"/a-b", `a\x2db`, true},
	{"/.hidden/x", `\x2ehidden-x`, true},
	{"/a/.hidden", `a-.hidden`, true},
	{"/home/user name/%h", `home-user\x20name-\x25h`, true},
	{"/dev/disk/by-uuid/1234", `dev-disk-by\x2duuid-1234`, true},
	{"/é\xff", `\xc3\xa9\xff`, true},
	{"relative/path", "relative-path", true},
	{"./rel", "rel", true},
	{"/a/../b", `a-..-b`, false},
	{"..", `\x2e.`, false},
	{".", `\x2e`, false},
	{"/" + strings.Repeat("x", 256), Escape(strings.Repeat("x", 256)), false},
}

func TestEscapePath(t *testing.T) {
	for _, tt := range escapePathTests {
		if got := EscapePath(tt.in); got != tt.out {
			t.Errorf("EscapePath(%q) = %q, want %q", tt.in, got, tt.out)
		}
	}
}

func TestUnescape(t *testing.T) {
	tests := []struct {
		in, out string
		err     string
	}{
		{"", "", ""},
		{"a-b", "a/b", ""},
		{`\x2D\x2d`, "--", ""},
		{`\xFF\xfe`, "\xff\xfe", ""},
		{`a\x00b`, "a\x00b", ""},
		{"a b", "a b", ""}, // unescaping does not validate
		{"-", "/", ""},
		{`\`, "", `unescape "\\": '\' at byte 0 not followed by 'x' and two hex digits`},
		{`a\x`, "", "at byte 1"},
		{`a\x4`, "", "at byte 1"},
		{`a\x4g`, "", "at byte 1"},
		{`a\y41`, "", "at byte 1"},
		{`ok\x41\n`, "", "at byte 6"},
	}
	for _, tt := range tests {
		got, err := Unescape(tt.in)
		if tt.err == "" {
			if err != nil || got != tt.out {
				t.Errorf("Unescape(%q) = %q, %v, want %q", tt.in, got, err, tt.out)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Unescape(%q) = %q, %v, want an error containing %q", tt.in, got, err, tt.err)
		}
	}
}

func TestBusPath(t *testing.T) {
	tests := []struct {
		name string
		path dbus.ObjectPath
	}{
		{"", "/org/freedesktop/systemd1/unit/_"},
		{"dbus.service", "/org/freedesktop/systemd1/unit/dbus_2eservice"},
		{"unitrun-3f2a.service", "/org/freedesktop/systemd1/unit/unitrun_2d3f2a_2eservice"},
		{"1a.service", "/org/freedesktop/systemd1/unit/_31a_2eservice"},
		{"a1.service", "/org/freedesktop/systemd1/unit/a1_2eservice"},
		{"getty@tty1.service", "/org/freedesktop/systemd1/unit/getty_40tty1_2eservice"},
		{`dev-sda\x2d1.device`, "/org/freedesktop/systemd1/unit/dev_2dsda_5cx2d1_2edevice"},
		{"_.service", "/org/freedesktop/systemd1/unit/_5f_2eservice"},
		{"é\xff", "/org/freedesktop/systemd1/unit/_c3_a9_ff"},
	}
	for _, tt := range tests {
		got := BusPath(tt.name)
		if got != tt.path {
			t.Errorf("BusPath(%q) = %q, want %q", tt.name, got, tt.path)
		}
		if !got.IsValid() {
			t.Errorf("BusPath(%q) = %q, not a valid object path", tt.name, got)
		}
	}
}

// FuzzEscape checks what systemd's escaping guarantees for every string,
// valid UTF-8 or not: Unescape(Escape(s)) == s, and Escape(s) is made only
// of characters allowed in unit names, without a leading '.'. For a path,
// EscapePath(p) is likewise made of unit-name characters, and for a
// normalized absolute path, "/" + Unescape(EscapePath(p)) is p without its
// trailing slash.
func FuzzEscape(f *testing.F) {
	for _, tt := range escapeTests {
		f.Add(tt.in)
	}
	for _, tt := range escapePathTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		got, err := Unescape(e)
		if err != nil || got != s {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, got, err)
		}
		if strings.HasPrefix(e, ".") {
			t.Fatalf("Escape(%q) = %q starts with '.'", s, e)
		}
		for i := 0; i < len(e); i++ {
			if !isNameChar(e[i]) {
				t.Fatalf("Escape(%q) = %q has %q", s, e, e[i])
			}
		}
		ep := EscapePath(s)
		for i := 0; i < len(ep); i++ {
			if !isNameChar(ep[i]) {
				t.Fatalf("EscapePath(%q) = %q has %q", s, ep, ep[i])
			}
		}
		if isNormalizedAbsolute(s) && s != "/" {
			got, err := Unescape(ep)
			if want := strings.TrimSuffix(s, "/"); err != nil || "/"+got != want {
				t.Fatalf("Unescape(EscapePath(%q)) = %q, %v, want %q", s, got, err, want[1:])
			}
		}
	})
}

// isNormalizedAbsolute reports whether p is an absolute path with no empty,
// "." or ".." component except a final empty one, and no component over 255
// bytes.
func isNormalizedAbsolute(p string) bool {
	if !strings.HasPrefix(p, "/") || len(p) >= 4096 {
		return false
	}
	comps := strings.Split(strings.TrimSuffix(p[1:], "/"), "/")
	for _, c := range comps {
		if c == "" || c == "." || c == ".." || len(c) > 255 {
			return false
		}
	}
	return true
}
