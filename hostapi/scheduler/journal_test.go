package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
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

// TestUnitOpJoinsRunningUnit calls a unit op whose unit someone else has
// running: the job joins that run, as unitrun start does, and its timeout
// ends the job but not the run, which goes on, and the record says so
// (before, the timeout stopped the unit, and said "unit ... stopped").
func TestUnitOpJoinsRunningUnit(t *testing.T) {
	conn := systemdtest.Conn(t)
	const name = "unitrun-test-opjoin.service"
	systemdtest.WriteUnit(t, filepath.Join(systemdtest.RuntimeUnitDir(t), name), "[Service]\nExecStart=/bin/sleep 60\n")
	if err := conn.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.StopUnit(context.Background(), name, "replace") })
	if _, err := conn.StartUnit(context.Background(), name, "replace"); err != nil {
		t.Fatal(err)
	}
	systemdtest.WaitActiveState(t, conn, name, "active")
	d, _ := newTestScheduler(t, conn, "\n[[op]]\nname = \"opjoin\"\nunit = \""+name+"\"\ntimeout = \"1s\"\n")
	r := call(t, d, "opjoin")
	want := "timeout 1s reached: stopped waiting for unit " + name + ", whose run, in progress before the job's start, goes on"
	if r.State != api.StateFailed || r.Result != "timeout" || r.Message != want {
		t.Errorf("state %s, result %s, message %q; want failed, timeout and %q", r.State, r.Result, r.Message, want)
	}
	if p, err := conn.Properties(context.Background(), name, manager.UnitIface); err != nil || p["ActiveState"].Value() != "active" {
		t.Errorf("after the job's timeout the unit is %v (%v); want it active still", p["ActiveState"], err)
	}
}
