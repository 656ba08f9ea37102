package config

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestCheckArgs(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-z]+$`)
	tests := []struct {
		name string
		op   Op
		args []string
		want string // "" for no error
	}{
		{"none allowed, none given", Op{Name: "x"}, nil, ""},
		{"none allowed", Op{Name: "x"}, []string{"a"}, `op "x": got 1 args, want at most 0`},
		{"too few", Op{Name: "x", Args: ArgsRule{Min: 2, Max: 3}}, []string{"a"}, `op "x": got 1 args, want at least 2`},
		{"too many", Op{Name: "x", Args: ArgsRule{Max: 1}}, []string{"a", "b"}, `op "x": got 2 args, want at most 1`},
		{"in range", Op{Name: "x", Args: ArgsRule{Min: 1, Max: 3}}, []string{"a", "b"}, ""},
		{"pattern", Op{Name: "x", Args: ArgsRule{Max: 2, Pattern: pattern}}, []string{"ok", "No"}, `op "x": arg 1 does not match pattern "^[a-z]+$"`},
		{"pattern as written", Op{Name: "x", Args: ArgsRule{Max: 1, Pattern: regexp.MustCompile(`[a-z]`)}}, []string{"9a9"}, ""},
		{"empty arg without pattern", Op{Name: "x", Args: ArgsRule{Max: 1}}, []string{""}, ""},
		{"NUL", Op{Name: "x", Args: ArgsRule{Max: 1}}, []string{"a\x00b"}, `op "x": arg 0 contains NUL`},
		{"UTF-8", Op{Name: "x", Args: ArgsRule{Max: 2}}, []string{"a", "\xff"}, `op "x": arg 1 is not valid UTF-8`},
		{"newline in lines request", Op{Name: "x", Unit: "x.service", RequestFile: "/r", RequestFormat: "lines", Args: ArgsRule{Max: 1}}, []string{"a\nb"}, `op "x": arg 0 contains a newline, which request_format "lines" cannot carry`},
		{"newline in nul request", Op{Name: "x", Unit: "x.service", RequestFile: "/r", RequestFormat: "nul", Args: ArgsRule{Max: 1}}, []string{"a\nb"}, ""},
		{"newline in argv", Op{Name: "x", Exec: []string{"/x"}, Args: ArgsRule{Max: 1}}, []string{"a\nb"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op.CheckArgs(tt.args)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckArgs(%q) = %q, want %q", tt.args, got, tt.want)
			}
		})
	}
}

func TestAllowed(t *testing.T) {
	tests := []struct {
		name string
		uids []uint32
		gids []uint32
		uid  uint32
		cgid []uint32
		want bool
	}{
		{"no lists: root", nil, nil, 0, nil, true},
		{"no lists: user", nil, nil, 1000, []uint32{0}, false},
		{"uid listed", []uint32{1000}, nil, 1000, nil, true},
		{"uid not listed", []uint32{1000}, nil, 1001, nil, false},
		{"root not implied by a list", []uint32{1000}, nil, 0, nil, false},
		{"gid listed", nil, []uint32{10}, 1001, []uint32{5, 10}, true},
		{"gid not listed", nil, []uint32{10}, 1001, []uint32{5}, false},
		{"either list", []uint32{7}, []uint32{10}, 7, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := Op{AllowUIDs: tt.uids, AllowGIDs: tt.gids}
			if got := op.Allowed(tt.uid, tt.cgid); got != tt.want {
				t.Errorf("Allowed(%d, %v) = %v, want %v", tt.uid, tt.cgid, got, tt.want)
			}
		})
	}
}

func TestArgv(t *testing.T) {
	tests := []struct {
		name string
		exec []string
		args []string
		want []string
	}{
		{"appended", []string{"/usr/bin/rpm-ostree", "rebase"}, []string{"img"}, []string{"/usr/bin/rpm-ostree", "rebase", "img"}},
		{"no args", []string{"/bin/x", "a"}, nil, []string{"/bin/x", "a"}},
		{"placed", []string{"/bin/x", "{args}", "--end"}, []string{"a", "b"}, []string{"/bin/x", "a", "b", "--end"}},
		{"placed, none", []string{"/bin/x", "{args}", "--end"}, nil, []string{"/bin/x", "--end"}},
		{"only whole word", []string{"/bin/x", "--a={args}"}, []string{"v"}, []string{"/bin/x", "--a={args}", "v"}},
		{"no shell", []string{"/bin/x"}, []string{"$(reboot)", "; rm -rf /", "*"}, []string{"/bin/x", "$(reboot)", "; rm -rf /", "*"}},
		{"unit op", nil, []string{"a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := Op{Exec: tt.exec}
			got := op.Argv(tt.args)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Argv(%q) = %q, want %q", tt.args, got, tt.want)
			}
			if len(got) > 0 {
				got[0] = "changed"
				if tt.exec[0] == "changed" {
					t.Error("Argv shares its result with the template")
				}
			}
		})
	}
}

func TestEnviron(t *testing.T) {
	op := Op{
		Env:            map[string]string{"RPMOSTREE_CLIENT_ID": "{caller}", "B": "x-{caller}-{caller}", "A": "plain"},
		EnvPassthrough: []string{"HTTP_PROXY", "NO_PROXY", "HTTPS_PROXY"},
	}
	host := map[string]string{"HTTP_PROXY": "http://p:3128", "NO_PROXY": "", "OTHER": "no"}
	from := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	got := op.Environ("uid-1000", from)
	want := []string{"A=plain", "B=x-uid-1000-uid-1000", "HTTP_PROXY=http://p:3128", "NO_PROXY=", "RPMOSTREE_CLIENT_ID=uid-1000"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Environ = %q, want %q", got, want)
	}
	if got := op.Environ("c", nil); strings.Join(got, " ") != "A=plain B=x-c-c RPMOSTREE_CLIENT_ID=c" {
		t.Errorf("Environ with nil from = %q", got)
	}
	if got := (&Op{}).Environ("c", from); len(got) != 0 {
		t.Errorf("Environ of an op without env = %q", got)
	}
}
