package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestUnitOpOutput calls unit ops whose units write to stdout and stderr,
// which systemd gives to the manager's journal, and checks that the
// record's output tail holds their lines, in order: once as journald
// usually stores them, with the run's unit and invocation ID, and once
// as it stores them on a busy host, when it reads the run's stream only
// after the manager has reaped its process and so knows no unit of the
// lines (here the run's first command stops journald and its last lets it
// go on once the run is over).
func TestUnitOpOutput(t *testing.T) {
	conn := systemdtest.Conn(t)
	pid, err := os.ReadFile(filepath.Join(systemdtest.Manager(t).Dir, "journald.pid"))
	if err != nil {
		t.Fatal(err)
	}
	journald := strings.TrimSpace(string(pid))
	run := "ExecStart=/bin/sh -c 'echo out; echo err >&2; echo last'\n"
	units := map[string]string{
		"unitrun-test-opout.service":  "[Service]\nType=oneshot\n" + run,
		"unitrun-test-oplate.service": "[Service]\nType=oneshot\nExecStartPre=/bin/kill -STOP " + journald + "\n" + run + "ExecStopPost=/bin/kill -CONT " + journald + "\n",
	}
	var ops strings.Builder
	for name, text := range units {
		systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), name), text)
		ops.WriteString("\n[[op]]\nname = \"" + strings.TrimSuffix(strings.TrimPrefix(name, "unitrun-test-"), ".service") + "\"\nunit = \"" + name + "\"\n")
	}
	if err := conn.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	d, _ := newTestScheduler(t, conn, ops.String())
	for _, op := range []string{"opout", "oplate"} {
		r := call(t, d, op)
		if r.State != api.StateSucceeded || r.OutputTail != "out\nerr\nlast\n" {
			t.Errorf("%s: state %s, output tail %q; want succeeded with the unit's three lines", op, r.State, r.OutputTail)
		}
	}
}
