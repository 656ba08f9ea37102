package busframe

import "github.com/godbus/dbus/v5"

// D-Bus names of the systemd manager, for the tests' messages.
const (
	objectPath   = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIface = "org.freedesktop.systemd1.Manager"
	unitIface    = "org.freedesktop.systemd1.Unit"
	serviceIface = "org.freedesktop.systemd1.Service"
	propsIface   = "org.freedesktop.DBus.Properties"
)
