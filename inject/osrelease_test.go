package inject

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestReadOSRelease(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    map[string]string
		wantErr string // after "inject: <path>:"
	}{
		{"rhel", "NAME=\"Red Hat Enterprise Linux\"\nVERSION=\"9.4 (Plow)\"\nID=\"rhel\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.4\"\n",
			map[string]string{"NAME": "Red Hat Enterprise Linux", "VERSION": "9.4 (Plow)", "ID": "rhel", "ID_LIKE": "fedora", "VERSION_ID": "9.4"}, ""},
		{"unquoted and comments", "# comment\n\n  ID=debian\nVERSION_ID=12 # trailing comment\nX=a\\ b\n",
			map[string]string{"ID": "debian", "VERSION_ID": "12", "X": "a b"}, ""},
		{"single quotes keep all", `A='it''s'` + "\n" + `B='a\"$b'` + "\n", map[string]string{"A": "its", "B": `a\"$b`}, ""},
		{"double-quote escapes", `A="say \"hi\" \\ \$HOME \` + "`" + `x\` + "`" + ` \n"` + "\n", map[string]string{"A": "say \"hi\" \\ $HOME `x` \\n"}, ""},
		{"concatenated", `A=pre"mid dle"'post'` + "\n", map[string]string{"A": "premid dlepost"}, ""},
		{"empty values", "A=\nB=\"\"\nC=''\n", map[string]string{"A": "", "B": "", "C": ""}, ""},
		{"last wins", "ID=a\nID=b\n", map[string]string{"ID": "b"}, ""},
		{"no final newline", "ID=fedora", map[string]string{"ID": "fedora"}, ""},
		{"unterminated double", "ID=\"rhel\n", nil, `1: ID: unterminated double quote`},
		{"unterminated single", "X=1\nID='rhel\n", nil, `2: ID: unterminated single quote`},
		{"unquoted blank", "NAME=Red Hat\n", nil, `1: NAME: unquoted blank inside the value: quote it`},
		{"trailing backslash", "A=x\\\n", nil, `1: A: backslash at end of line`},
		{"no equals", "ID rhel\n", nil, `1: want KEY=value with KEY a shell variable name`},
		{"bad key", "1D=rhel\n", nil, `1: want KEY=value with KEY a shell variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "os-release")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadOSRelease(path)
			if tt.wantErr != "" {
				if want := "inject: " + path + ":" + tt.wantErr; err == nil || err.Error() != want {
					t.Fatalf("ReadOSRelease = %v, %v; want error %q", got, err, want)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ReadOSRelease = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestReadOSReleaseDefault(t *testing.T) {
	got, err := ReadOSRelease("")
	if err != nil {
		t.Fatal(err)
	}
	if got["ID"] == "" {
		t.Errorf("the host's os-release has no ID: %v", got)
	}
	if _, err := ReadOSRelease(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("ReadOSRelease of a missing file succeeded")
	}
}
