// Package podrun is the runtime of pods, the impure half beside package
// [github.com/unitrun/unitrun/pod], which describes them: it reaches the
// manager over D-Bus, executes the apps' commands and boots isolated pods'
// own systemd.
//
// A [Runner] creates, starts, stops and removes pods on one manager and
// reads their status. The hooks are what the units of a pod's graph run,
// through the hidden "unitrun pod unit-hook" commands (see package pod for the
// graph): [Await] holds an app's first run until the sidecar before it
// has started and the retried init apps before it have succeeded,
// [MountRoot] mounts the image root of an app of a host pod,
// [ExecApp] starts a run where the small hook binary does not
// (package pod/appexec), [ReapApp] records each exit and
// applies the policies, [Reap] and [Shutdown] end apps and the pod,
// [RunProbe] checks an app's health and acts on it, and [RunContainer] and
// [ContainerExited] run an isolated pod's own systemd and record its end.
// Before it creates anything, a create checks on this host what an app's
// run needs (rootfs, user, group, working directory).
package podrun
