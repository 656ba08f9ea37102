package job

import (
	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/unit"
)

// Detached returns the properties of a unit that runs on its own once
// started, as "unitrun run --no-wait" starts it: no one waits for its
// outcome, so the unit does not remain after its command exits and is
// collected however it ended, its input is the null device and its output
// goes to the journal, as systemd-run's does: none of its streams is a
// descriptor of the caller, which may be gone when Restart= restarts it.
// Put them before a Cmd's other Properties, which then override them, and
// call Start without Wait.
func Detached() []unit.Property {
	return []unit.Property{
		{Name: "RemainAfterExit", Value: dbus.MakeVariant(false)},
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
		{Name: "StandardInput", Value: dbus.MakeVariant("null")},
		{Name: "StandardOutput", Value: dbus.MakeVariant("journal")},
		{Name: "StandardError", Value: dbus.MakeVariant("journal")},
	}
}
