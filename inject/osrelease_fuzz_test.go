package inject

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadOSRelease checks that ReadOSRelease never panics, that every key
// it returns is a shell variable name and no value holds a line break, and
// that a value written single-quoted reads back exactly.
func FuzzReadOSRelease(f *testing.F) {
	f.Add([]byte("ID=debian\nVERSION_ID=\"12\"\n# c\nNAME='Debian GNU/Linux'\n"), "rhel")
	f.Add([]byte("A=\"x\\\"y\\$z\\`\" # comment\nB=a\\ b\n"), "9.4")
	f.Add([]byte("A='unterminated\nB=\"x\n"), "")
	f.Add([]byte("=x\n1A=y\n A = b\n"), "a\"b$c`d\\e")
	f.Fuzz(func(t *testing.T, data []byte, value string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "os-release")
		os.WriteFile(path, data, 0o644)
		if fields, err := ReadOSRelease(path); err == nil {
			for k, v := range fields {
				if !osReleaseKeyRE.MatchString(k) || strings.ContainsAny(v, "\n") {
					t.Fatalf("%q: field %q=%q", data, k, v)
				}
			}
		}
		if strings.ContainsAny(value, "'\n") {
			return
		}
		os.WriteFile(path, []byte("X='"+value+"'\n"), 0o644)
		fields, err := ReadOSRelease(path)
		if err != nil || fields["X"] != value {
			t.Fatalf("X='%s' read as %q, %v", value, fields["X"], err)
		}
	})
}
