package job_test

import (
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/unit"
)

// Env resolves a repeated name as os/exec does, the last entry winning,
// and wins over an Environment= among the Properties, as systemd-run's -E
// wins over its -p Environment=; with a word that holds '$', the command
// goes through a drop-in, and the rule holds there too.
func TestEnvLastWins(t *testing.T) {
	for _, script := range []string{"printenv A B", "printenv A B; : '$'"} {
		for _, env := range [][]string{{"A=2", "B=x"}, {"A=1", "B=x", "A=2"}} {
			c := sh(t, script)
			c.Env = env
			c.Properties = []unit.Property{{Name: "Environment", Value: dbus.MakeVariant([]string{"A=0", "B=y"})}}
			out, err := c.Output()
			if err != nil || string(out) != "2\nx\n" {
				t.Errorf("%s with Env %q: output %q, %v; want 2 and x", script, env, out, err)
			}
		}
	}
}

// A bad entry is refused by name before anything is created.
func TestEnvRefused(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{"", `Env[0] "": must be KEY=value`},
		{"=x", `environment variable name ""`},
		{"bad name=x", `environment variable name "bad name"`},
		{"NOVALUE", `Env[0] "NOVALUE": must be KEY=value`},
	} {
		c := sh(t, "true")
		c.Env = []string{tc.entry}
		err := c.Run()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Env %q: %v, want an error containing %q", tc.entry, err, tc.want)
		}
		if c.Unit != "" {
			t.Errorf("Env %q: unit %s created for a refused command", tc.entry, c.Unit)
		}
	}
}
