// The tests in this file run against a real systemd user manager booted by
// internal/systemdtest, which keeps transient units across daemon-reload
// (its transient unit directory is on its unit search path).

package hostapi

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// TestOutcomeCommandSystemd proves OutcomeCommand against a real manager:
// each unit's outcome is recorded as systemd gives it to ExecStopPost=,
// also for units that stop after a daemon-reload, which re-reads transient
// units from the unit files systemd wrote for them.
func TestOutcomeCommandSystemd(t *testing.T) {
	conn := systemdtest.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := OpenStore(filepath.Join(t.TempDir(), `st ate "q" %n`))
	if err != nil {
		t.Fatal(err)
	}
	type execCommand struct {
		Path          string
		Args          []string
		IgnoreFailure bool
	}
	tests := []struct {
		unit string
		argv []string
		stop func(name string) error // nil: the command ends by itself
		want Outcome
	}{
		{"unitrun-test-outcome-exit.service", []string{"/bin/sh", "-c", "exit 7"}, nil, Outcome{"exit-code", "exited", "7"}},
		{"unitrun-test-outcome-true.service", []string{"/bin/true"}, nil, Outcome{"success", "exited", "0"}},
		{"unitrun-test-outcome-missing.service", []string{"/nonexistent"}, nil, Outcome{"exit-code", "exited", "203"}},
		{"unitrun-test-outcome-kill.service", []string{"/bin/sleep", "60"}, func(name string) error {
			return conn.KillUnit(ctx, name, "all", int32(syscall.SIGKILL))
		}, Outcome{"signal", "killed", "KILL"}},
		{"unitrun-test-outcome-stop.service", []string{"/bin/sleep", "60"}, func(name string) error {
			_, err := conn.StopUnit(ctx, name, "replace")
			return err
		}, Outcome{"success", "killed", "TERM"}},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		ids[i] = s.NewID()
		if err := s.Put(&Record{ID: ids[i], Op: "test", State: StateRunning}); err != nil {
			t.Fatal(err)
		}
		post, err := OutcomeCommand(s.OutcomePath(ids[i]))
		if err != nil {
			t.Fatal(err)
		}
		props := []unit.Property{
			{Name: "Type", Value: dbus.MakeVariant("exec")},
			{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
			unit.Exec("ExecStart", tt.argv[0], tt.argv),
			unit.Exec("ExecStopPost", post[0], post),
		}
		if _, err := conn.StartTransientUnit(ctx, tt.unit, "fail", props); err != nil {
			t.Fatalf("%s: %v", tt.unit, err)
		}
		t.Cleanup(func() { conn.ResetFailedUnit(context.Background(), tt.unit) })
	}
	// The units to stop must run before the reload, so that their
	// ExecStopPost= is one systemd read back from their unit files.
	for _, tt := range tests {
		for tt.stop != nil {
			props, err := conn.Properties(ctx, tt.unit, manager.UnitIface)
			if err != nil {
				t.Fatalf("%s: %v", tt.unit, err)
			}
			if state, _ := props["ActiveState"].Value().(string); state == "active" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := conn.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		if tt.stop != nil {
			if err := tt.stop(tt.unit); err != nil {
				t.Errorf("%s: %v", tt.unit, err)
			}
		}
	}
	for i, tt := range tests {
		for {
			o, ok, err := s.ReadOutcome(ids[i])
			if err != nil {
				t.Fatalf("%s: %v", tt.unit, err)
			}
			if ok {
				if o != tt.want {
					t.Errorf("%s: outcome %+v, want %+v", tt.unit, o, tt.want)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: no outcome written", tt.unit)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
