package unit

import (
	"reflect"
	"strings"
	"testing"
)

// ParseProperty never panics, and what it accepts names a known property
// and carries a value D-Bus can send.
func FuzzParseProperty(f *testing.F) {
	for _, s := range []string{"MemoryMax=1G", "CPUQuota=50%", "Environment=A=1 B=2", "After=a.service b.target",
		"RuntimeMaxSec=1min 30s", "KillSignal=SIGTERM", "TasksMax=infinity", "Nice=-20", "=", "Foo", "MemoryMax=\xff"} {
		f.Add(s)
	}
	known := map[string]bool{}
	for _, k := range KnownProperties() {
		known[k] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParseProperty(s)
		if err != nil {
			return
		}
		key, _, _ := strings.Cut(s, "=")
		if !known[key] {
			t.Fatalf("ParseProperty(%q) accepted unknown key %q", s, key)
		}
		for _, p := range ps {
			if p.Name == "" || p.Value.Signature().String() == "" {
				t.Fatalf("ParseProperty(%q) = %+v", s, ps)
			}
			if !stringsValid(reflect.ValueOf(p.Value.Value())) {
				t.Fatalf("ParseProperty(%q) gave a string value that is not UTF-8", s)
			}
		}
	})
}

// Validate never panics, and every name it accepts is one RandomName-style
// generation and BusPath can carry.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"a.service", "a@b.service", "-.slice", "x", "a b.service", strings.Repeat("a", 250) + ".service"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Validate(s) != nil {
			return
		}
		if len(s) > MaxNameLen {
			t.Fatalf("Validate accepted %d bytes", len(s))
		}
		p := string(BusPath(s))
		for _, c := range p[len("/org/freedesktop/systemd1/unit/"):] {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
				t.Fatalf("BusPath(%q) = %q has %q", s, p, c)
			}
		}
	})
}
