package main

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/godbus/dbus/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// timerFlags are systemd-run's flags that make a transient timer run the
// command: each sets the timer setting of its name, and may be repeated.
var timerFlags = []struct{ flag, setting, usage string }{
	{"on-active", "OnActiveSec", "run the command `SPAN` after now (a time span: 30s, 5min, 1h 30min; repeatable)"},
	{"on-boot", "OnBootSec", "run the command `SPAN` after the machine booted (repeatable)"},
	{"on-startup", "OnStartupSec", "run the command `SPAN` after the manager started (repeatable)"},
	{"on-unit-active", "OnUnitActiveSec", "run the command `SPAN` after its service last started (repeatable)"},
	{"on-unit-inactive", "OnUnitInactiveSec", "run the command `SPAN` after its service last stopped (repeatable)"},
	{"on-calendar", "OnCalendar", "run the command at the times of calendar event `SPEC` (systemd.time(7), checked by the manager; repeatable)"},
}

// timerRefuses are the flags of run that a timer does not take: it runs
// the command later, on its own, as --no-wait does.
var timerRefuses = []string{"scope", "pty", "shell", "retry", "bind-to-caller", "self"}

// addTimerFlags adds timerFlags to fl.
func addTimerFlags(fl *pflag.FlagSet) {
	for _, t := range timerFlags {
		fl.StringArray(t.flag, nil, t.usage)
	}
}

// timerProperties returns the timer settings that the timer flags of fl
// give, as systemd-run sends them (TimersMonotonic, TimersCalendar), or
// none if no timer flag was given. A span is checked here; a calendar
// event by the manager, which refuses the whole call, so nothing is
// created.
func timerProperties(fl *pflag.FlagSet) ([]unit.Property, error) {
	var props []unit.Property
	for _, t := range timerFlags {
		values, _ := fl.GetStringArray(t.flag)
		if fl.Changed(t.flag) && len(values) == 0 {
			values = []string{""} // pflag keeps no empty value
		}
		for _, v := range values {
			if t.setting == "OnCalendar" {
				if strings.TrimSpace(v) == "" || strings.IndexFunc(v, unicode.IsControl) >= 0 {
					return nil, fmt.Errorf("--%s %q: not a calendar event (systemd.time(7))", t.flag, v)
				}
				props = append(props, unit.Property{Name: "TimersCalendar", Value: dbus.MakeVariant([]struct{ Base, Spec string }{{t.setting, v}})})
				continue
			}
			d, err := unit.ParseTimeSpan(v)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", t.flag, err)
			}
			usec := uint64(d.Microseconds())
			if d == math.MaxInt64 {
				usec = math.MaxUint64 // infinity: never
			}
			props = append(props, unit.Property{Name: "TimersMonotonic", Value: dbus.MakeVariant([]struct {
				Base string
				USec uint64
			}{{t.setting, usec}})})
		}
	}
	return props, nil
}

// startTimer makes the timer, with settings timer, that runs the command
// c describes, and its service, as systemd-run with a timer flag does,
// and tells their names: the service's on stdout ({"unit", "timer"} with
// --json), and systemd-run's lines on stderr unless -q. "unitrun wait"
// on the service waits for its next run.
func startTimer(cmd *cobra.Command, g *globals, mgr *manager.Conn, f *runFlags, c *job.Cmd, timer []unit.Property) error {
	c.Manager = mgr
	name, err := c.StartTimer(timer)
	var de dbus.Error
	if errors.As(err, &de) && de.Name == "org.freedesktop.DBus.Error.InvalidArgs" && cmd.Flags().Changed("on-calendar") {
		return &exitError{code: exitUsage, err: fmt.Errorf("--on-calendar: the manager refuses it: %s", strings.Join(strings.Fields(fmt.Sprint(de.Body...)), " "))}
	}
	if err != nil {
		return exitFor(g.unitTaken(cmd.Context(), err, mgr, name), false)
	}
	if !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "Running timer as unit: %s\nWill run service as unit: %s\n", name, c.Unit)
	}
	if f.asJSON {
		return printLine(cmd.OutOrStdout(), map[string]string{"unit": c.Unit, "timer": name})
	}
	fmt.Fprintln(cmd.OutOrStdout(), c.Unit)
	return nil
}
