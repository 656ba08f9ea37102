// Package pod describes a group of cooperating apps run as a graph of
// systemd units, with Kubernetes-like exit and restart policies. It is the
// pure half of pods: it reaches no manager, runs no process and calls no
// systemd; package [github.com/unitrun/unitrun/pod/podrun], the runtime,
// does, with what this package decides.
//
// It holds the manifest and its validation ([Parse], [Load]), the unit
// graph rendered from it ([Nodes], [Graph], [ContainerService]) and drawn
// as a diagram ([Diagram]), the unit names ([AppUnit] and the others), the
// state directory ([WriteState], [WritePod] and its readers, [List],
// [Logs]). What an exit records and the policies it applies live in
// package [github.com/unitrun/unitrun/pod/record], which links the
// standard library alone, so that a small program (cmd/unitrun-hook) can
// run it at every exit: the status files and app records
// (record.WriteExitCode, record.WriteApp and their readers), an app's exit as
// systemd tells ExecStopPost= (record.Exit, read with exit.ExitFromEnv), the
// policies that decide what happens when an app exits (record.Decide,
// with the [Manifest.Policy] that a pod's creation saves), and the
// recording of an exit that applies them (record.RecordExit), which
// reaches no manager. The log copier (logcopy.Copy, package pod/logcopy)
// is split out alike.
//
// # Unit graph
//
// For a pod P with apps A…, [Graph] renders (the names of the slice, the
// target and the apps' services from [SliceUnit], [TargetUnit] and
// [AppUnit]):
//
//   - unitrun-pod-P.slice holds every service of the pod.
//   - unitrun-pod-P.target Wants= and is After= every app service.
//   - unitrun-pod-P-A.service runs app A (Type=exec). Its ExecStopPost=
//     runs "unitrun pod unit-hook reap-app P A" (reap-app), which records the exit
//     from $SERVICE_RESULT, $EXIT_CODE and $EXIT_STATUS (exit.ExitFromEnv)
//     the moment the app stops, on every stop (record.RecordExit). Where the
//     small hook binary is installed beside unitrun ([HookBinary],
//     RenderOptions.Hook), the unit runs it with that command line after
//     unitrun's path (and so its ExecStart=, the start hook, below): it
//     records the exit itself, with the same
//     record.RecordExit, and runs unitrun only for what needs the manager (an
//     exit that would restart the app: is a job stopping it?; ending the
//     pod). It Wants= and is After= its
//     reaper, so at a stop of both the app stops first.
//   - unitrun-pod-P-A-reaper.service starts at once and does nothing
//     (Type=oneshot with no ExecStart=, so no process, RemainAfterExit=yes,
//     StopWhenUnneeded=yes). It stops once its app is neither active nor
//     restarting. For an app that may restart, its ExecStop= runs "unitrun
//     pod reap P A", which marks finished for good an app recorded as
//     restarting. reap-app has already recorded the end of any other app,
//     whose reaper is unitrun-pod-P-A-reaper.target instead, with the same
//     dependencies and StopWhenUnneeded=yes, in no slice: a service would
//     have to run a process at its stop (systemd refuses a service with
//     neither ExecStart= nor ExecStop=), one more on every exit.
//   - unitrun-pod-P-A-probe.service, for an app with a liveness, readiness
//     or startup probe, BindsTo= and is After= the app, which Wants= it, so
//     it starts and stops with the app. It runs "unitrun pod probe P A"
//     (podrun.RunProbe), which checks the app on each run, from the run's
//     start, and records the results and whether the app is ready in its
//     record; at a failure threshold a liveness or startup probe restarts
//     the app, whose reap-app then counts a restart, or a liveness probe
//     ends the pod, whose reap-app then records the app's exit as a failure.
//   - unitrun-pod-P-shutdown.service is built like a reaper, and every
//     reaper Wants= it and is After= it: it stops once the last reaper has
//     stopped, and its ExecStop= runs "unitrun pod shutdown P", which
//     computes the pod's exit code and phase and ends the pod.
//
// Init apps run as Type=oneshot, each Requires= and After= the init app
// before it, and every other app Requires= and is After= every init app,
// so each starts only once the init apps before it have succeeded. A
// retried init app (App.Retried, restartPolicy OnFailure) has
// Restart=on-failure and the back-off hook, but systemd 252 fails the
// start jobs of the units that require a oneshot service at its first
// failure, restart or not: the units after it are only After= it, and
// their first run waits in the ExecStartPre= await hook until it has
// succeeded. Waiting there, they keep their reapers, and with them the
// shutdown service, needed while it retries. A retried init app has a
// reaper, which ends its last restart if the pod stops between two runs;
// it is After= the shutdown service, so that it stops first, but does not
// Want= it. An init app under restartPolicy Never has no reaper and is
// After= the shutdown service itself, so that a stop of the pod while it
// runs records its exit before the shutdown service computes the pod's.
// An init app has RemainAfterExit=yes, so that a restart of another app, which
// pulls in what it Requires=, does not run it again. It therefore stays
// active for the pod's whole life, and so has no reaper that Wants= the
// shutdown service: one would keep it needed until the pod is stopped. Its ExecStartPost= also
// runs reap-app, to record its success the moment it finishes
// (ExecStopPost= runs only when it fails or is stopped; reap-app tells the
// two runs of one invocation apart by $INVOCATION_ID). A stop that kills
// that ExecStartPost= after the command exited 0 makes systemd's result
// "signal", with the command's $EXIT_CODE and $EXIT_STATUS: ExecStopPost=
// records the command's success all the same. The apps after it, whose
// start jobs the stop canceled, run no hook at all: the shutdown hook
// records them as stopped before their command ran.
//
// A sidecar (App.Sidecar) Requires= and is After= the init apps listed
// before it, and the init apps listed after it and every other app Wants=
// and are After= it: it starts before them and stops after them. Since a
// unit of Type=exec has started before its command runs, the first run of
// each of those apps waits in its ExecStartPre= await hook until the
// sidecar before it (Manifest.SidecarBefore) runs its command and has
// passed its startup probe. Its
// restart policy is Always; its reaper neither Wants= nor is After= the
// shutdown service, so the pod ends when its other apps have ended, and
// the end's stop of the slice stops the sidecars.
//
// Every unit sets DefaultDependencies=no and spells out the dependencies it
// needs, so the graph is the same under a system manager, a user manager and
// a pod's own systemd. Apps, target and slice conflict with shutdown.target.
// Reapers and the shutdown service conflict with, and are ordered before,
// shutdown.target, exit.target, halt.target and poweroff.target: a stop from
// outside (systemctl exit, halt, poweroff, SIGRTMIN+3/+4 to a pod's systemd)
// stops every app first, then every reaper, then the shutdown service, so
// every exit is recorded. A user manager has no halt.target or
// poweroff.target; it stops through exit.target, which pulls in
// shutdown.target. Unit names escape pod and app names as systemd-escape
// does ('-' becomes \x2d), so no two pods or apps share a unit and a pod's
// slice never nests inside another pod's.
//
// Restart policies map onto Restart= (Never: no, Always: always, OnFailure:
// on-failure) with StartLimitIntervalSec=0, so restarts never hit the start
// limit; between two runs the app is "activating", which keeps its reaper
// needed. systemd 252 has no back-off steps: every app's main process is
// the start hook, "unitrun pod unit-hook start P A" (appexec.Start, run by
// the small hook binary where there is one), which first waits out the delay
// that reap-app recorded from record.Decide if the run follows a restart (the
// app is then active, which keeps its reaper needed too), records the
// start of each run, pipes the run's output through a copier that keeps
// the log from filling the records' file system and marks the run's start
// and each write's time in the log's times file (logcopy.Copy), sets
// the app's env (which no unit file holds) and then takes on the app's
// rootfs, workingDir, group and user and executes its command: the unit
// has no User=, Group=, WorkingDirectory= or RootDirectory=, which
// systemd 252 applies to the "+" hooks too, so that nothing the manifest
// asks of a run can keep the hooks from recording it.
//
// # Isolated pods
//
// An isolated pod (isolation: namespaces) runs its graph under a systemd of
// its own, PID 1 of new PID, mount, UTS and IPC namespaces (and network,
// for network: none), whose hostname is the pod's name. On the runner's
// manager it is one service, [ContainerUnit], whose main process is
// "unitrun pod container" (podrun.RunContainer): the whole pod is that
// service's cgroup (Delegate=yes), and stopping the service powers the
// pod's systemd off, which stops the graph as a stop from outside does, so
// every exit is recorded. The pod's units live in STATE/pods/P/units, the
// container's /run is STATE/pods/P/run, and the state directory and the
// unitrun binary are bound into the container at their own paths, so the
// hooks inside write the status files that the runner reads outside.
//
// # Status files
//
// Under a state directory DIR, for pod P and app A:
//
//	DIR/pods/P/status/A      the exit code of A's last exit, as decimal text
//	DIR/pods/P/apps/A.json   A's AppStatus
//	DIR/pods/P/apps/A.start-error  why A's run could not execute its command, until reap-app records it (empty while the run goes on; removed as it ends)
//	DIR/pods/P/pod.json      P's PodStatus
//	DIR/pods/P/policy.json   P's record.Policy: what an exit's hook reads of the pod (its creation writes it, its start again if the start chooses another exit policy)
//
// Writers replace a file atomically (temporary file, then rename), so a
// reader sees the old content or the new. Every file is mode 0600, in a
// pod directory of mode 0700: the manifests hold the apps' env, the logs
// their output, and only root reads them. Only pod.json, which holds the
// pod's outcome, the manifest and the policies are also synced to disk (fsync of file
// and directory); status files, app records and unit files are not: they
// describe a running pod whose units, in the manager's runtime unit
// directory, a crash of the host takes away. Readers
// stay inside DIR, refuse a file, or a directory on the way to it, that is
// a symlink or not of the expected type, and refuse content that does not
// parse exactly.
package pod
