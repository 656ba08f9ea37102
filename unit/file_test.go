package unit

import (
	"strings"
	"testing"
)

func TestFileBytes(t *testing.T) {
	var f File
	f.Set("Unit", "Description", "A test")
	f.Set("Service", "Type", "oneshot")
	f.Set("Unit", "After", "a.service")
	f.Set("Service", "ExecStart", `"/bin/true"`)
	f.Set("Service", "ExecStart", "")
	f.Set("X-Unitrun", "Job-Id", "7")
	got, err := f.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	want := `[Unit]
Description=A test
After=a.service

[Service]
Type=oneshot
ExecStart="/bin/true"
ExecStart=

[X-Unitrun]
Job-Id=7
`
	if string(got) != want {
		t.Errorf("Bytes() =\n%s\nwant\n%s", got, want)
	}

	if got, err := (&File{}).Bytes(); err != nil || len(got) != 0 {
		t.Errorf("empty File: Bytes() = %q, %v", got, err)
	}
	empty := File{Sections: []Section{{Name: "Install"}, {Name: "Unit", Options: []Option{{"Description", "x"}}}}}
	if got, err := empty.Bytes(); err != nil || string(got) != "[Install]\n\n[Unit]\nDescription=x\n" {
		t.Errorf("section without options: Bytes() = %q, %v", got, err)
	}
}

func TestFileBytesErrors(t *testing.T) {
	tests := []struct {
		section, key, value string
		err                 string
	}{
		{"Service", "ExecStart", "a\nb", `unit file [Service] ExecStart=: value contains a raw newline`},
		{"Service", "ExecStart", "a\x00b", "value contains a NUL byte"},
		{"Unit", "Description", "a\rb", "raw carriage return"},
		{"Unit", "Description", "\xff\xfe", "not valid UTF-8"},
		{"Unit", "Description", " x", "begins with white space"},
		{"Unit", "Description", "\tx", "begins with white space"},
		{"Unit", "Description", "x ", "ends with white space"},
		{"Unit", "Description", `x\`, "ends in a backslash"},
		{"Unit", "Description", `x\\\`, "ends in a backslash"},
		{"Unit", "Description", strings.Repeat("x", maxLine-len("Description=")), "line is 1048576 bytes long (max 1048575)"},
		{"Unit", "Desc ription", "x", `unit file [Unit] key "Desc ription": character ' ' not allowed (allowed: ASCII letters, digits, '-')`},
		{"Unit", "Desc=ription", "x", "character '=' not allowed"},
		{"Unit", "", "x", `key "": empty`},
		{"Unit", "Dé", "x", "character 'é' not allowed"},
		{"Se]rvice", "Type", "x", `unit file section "Se]rvice": character ']' not allowed`},
		{"", "Type", "x", `unit file section "": empty`},
		{"Unit\n", "Type", "x", `character '\n' not allowed`},
	}
	for _, tt := range tests {
		var f File
		f.Set(tt.section, tt.key, tt.value)
		_, err := f.Bytes()
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Bytes() with [%q] %q=%q: %v, want an error containing %q", tt.section, tt.key, tt.value, err, tt.err)
		}
	}
	// What the rules allow.
	for _, v := range []string{"", `x\\`, "a \t b", "é", strings.Repeat("x", maxLine-1-len("Description="))} {
		var f File
		f.Set("Unit", "Description", v)
		if _, err := f.Bytes(); err != nil {
			t.Errorf("Bytes() with Description=%.20q: %v", v, err)
		}
	}
}
