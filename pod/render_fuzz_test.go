package pod

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzGraphNoInjection puts fuzzed strings in an app's argv, environment
// value and working directory, the places a manifest's strings reach a
// unit file. Whatever Parse accepts, Graph renders into an app unit with
// exactly the sections and settings it writes for such an app: no string
// adds a line, a section or a setting.
func FuzzGraphNoInjection(f *testing.F) {
	f.Add("x\nExecStartPre=/bin/touch /tmp/p", "v\n[Service]\nExecStopPost=/bin/true", "/w %h")
	f.Add("%n $HOME ${X} $$ \\", `"'; x`, "/a\\")
	f.Add("x\\", "x\r\nUser=root", "/w\nUser=root")
	f.Add("", "\x1b[2J", "/w/ x")
	f.Fuzz(func(t *testing.T, word, value, dir string) {
		data, err := json.Marshal(map[string]any{
			"name": "p",
			"apps": []any{map[string]any{"name": "a", "exec": []string{"/bin/echo", word}, "env": map[string]string{"K": value}, "workingDir": dir}},
		})
		if err != nil {
			return
		}
		m, err := Parse(data)
		if err != nil {
			return
		}
		files, err := Graph(m, goldenOptions)
		if err != nil {
			t.Fatalf("Parse accepted a manifest that Graph refuses: %v", err)
		}
		for _, file := range files {
			if file.Name != AppUnit("p", "a") {
				continue
			}
			var got []string
			for _, line := range bytes.Split(bytes.TrimSuffix(file.Data, []byte("\n")), []byte("\n")) {
				if key, _, ok := strings.Cut(string(line), "="); ok {
					got = append(got, key)
				} else {
					got = append(got, string(line))
				}
			}
			// The command and its workingDir are not in the unit: the
			// exec hook reads them from the pod's state.
			want := "[Unit] Description DefaultDependencies StartLimitIntervalSec Wants After Conflicts Before  [Service] Type Slice Delegate ExecStart ExecStopPost Restart SyslogIdentifier StandardOutput StandardError CPUAccounting MemoryAccounting TasksAccounting IOAccounting"
			if strings.Join(got, " ") != want {
				t.Fatalf("app unit has lines\n%s\nwant\n%s\nunit:\n%s", strings.Join(got, " "), want, file.Data)
			}
		}
	})
}
