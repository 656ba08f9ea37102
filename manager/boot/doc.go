// Package boot boots the systemd managers that unitrun runs itself: the
// embedded user manager (Embedded), in a mount namespace of its own with a
// session bus and a systemd-journald beside it, for hosts where no manager
// is reachable, and a container's system manager (Container), PID 1 of new
// namespaces, for pods. It sets up their namespaces, cgroups, base units and
// files and waits until they are ready; package manager reaches them over
// D-Bus.
package boot
