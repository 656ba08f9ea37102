package podrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/manager/boot"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// sigRTMin is glibc's SIGRTMIN on Linux.
const sigRTMin = 34

// sigPoweroff (SIGRTMIN+4, in glibc's numbering) powers a systemd manager
// off (systemd(1)).
const sigPoweroff = syscall.Signal(sigRTMin + 4)

// binds are the paths that an isolated pod's container binds in at their
// own paths: the state directory, the unitrun binary and, if it is
// installed beside it, the small hook binary, which the units were
// rendered to run when it was there.
func binds(stateDir, binary string) []string {
	b := []string{stateDir, binary}
	if hook := pod.HookBinary(binary); hook != "" {
		b = append(b, hook)
	}
	return b
}

// RunContainer is the main process of isolated pod name's [pod.ContainerUnit]:
// it boots the pod's own systemd (see [boot.Container]) in its own
// cgroup, the service's, with the pod's target and units, the state
// directory and binary (the unitrun binary the hooks run, and the hook
// binary beside it: [binds]) bound in, and
// its host process id in STATE/pods/P/container.pid while it runs. It calls
// ready once the boot is over, which is once the start job of the pod's
// target is done (or the pod is already ending). When ctx ends it powers
// the pod's systemd off (SIGRTMIN+4), which stops the graph and records
// every exit. It returns once the pod's systemd has exited.
func RunContainer(ctx context.Context, stateDir, binary, name string, ready func() error) error {
	m, err := pod.LoadSpec(stateDir, name)
	if err != nil {
		return err
	}
	if !isolated(m) {
		return fmt.Errorf("pod %s has isolation %s: it has no systemd of its own", name, m.Isolation)
	}
	// Checked at pod create too; a rootfs may have been replaced since by
	// a link to /, into which the container would mount.
	if err := errors.Join(checkHost(m, nil)...); err != nil {
		return fmt.Errorf("pod %s: %w", name, err)
	}
	dir := record.Dir(stateDir, name)
	c := &boot.Container{
		Dir:       filepath.Join(dir, containerRun),
		Target:    pod.TargetUnit(name),
		UnitPath:  []string{filepath.Join(dir, containerUnits)},
		Hostname:  name,
		Binds:     binds(stateDir, binary),
		NoNetwork: m.Network == pod.NoNetwork,
		Delegated: true,
	}
	if c.Overlays, err = imageOverlays(stateDir, m); err != nil {
		return fmt.Errorf("pod %s: %w", name, err)
	}
	for _, a := range m.Apps {
		if a.Rootfs != "" && !slices.Contains(c.Roots, a.Rootfs) {
			c.Roots = append(c.Roots, a.Rootfs)
		}
	}
	if err := c.Start(); err != nil {
		return err
	}
	pidFile := filepath.Join(dir, containerPID)
	if err := atomicfile.Write(pidFile, []byte(strconv.Itoa(c.PID())+"\n"), 0o644); err != nil {
		c.Signal(syscall.SIGKILL)
		c.Wait()
		return err
	}
	defer os.Remove(pidFile)
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	bootCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	booted := make(chan error, 1)
	go func() { booted <- c.WaitBooted(bootCtx) }()
	done := ctx.Done()
	for {
		select {
		case err := <-booted:
			booted = nil
			if done == nil {
				// A stop came while the pod's systemd booted, maybe
				// before it had a handler for the signal, which the
				// kernel then dropped: it is PID 1 of its namespace.
				c.Signal(sigPoweroff)
				continue
			}
			if err == nil && ready != nil {
				if err := ready(); err != nil {
					c.Signal(sigPoweroff)
				}
			}
		case <-done:
			// A stop of the service: the apps' exits are not theirs to
			// decide on, as under Runner.Stop.
			done = nil
			record.MarkStopping(stateDir, name)
			c.Signal(sigPoweroff)
		case <-exited:
			// How the manager ended is in the pod's records, not here: a
			// powered-off manager exits as it likes.
			return nil
		}
	}
}

// readContainerPID returns the host process id of isolated pod name's systemd,
// while it runs.
func readContainerPID(stateDir, name string) (int, error) {
	if err := pod.CheckNames(name); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(record.Dir(stateDir, name), containerPID))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s: not a process id", containerPID)
	}
	return pid, nil
}

// ContainerExited is the ExecStopPost= of an isolated pod's container
// service. If the pod's systemd ended without the shutdown hook recording
// the pod's end (it was killed, or failed to boot), it records it from the
// app records: the pod fails with the exit code [record.PodExitCode] gives the
// recorded exits, or 255 if that is 0, since an app never recorded an end.
func ContainerExited(stateDir, name string) error {
	unlock, err := record.Lock(stateDir, name)
	if err != nil {
		return err
	}
	defer unlock()
	m, ps, err := pod.LoadState(stateDir, name)
	if err != nil || ps.Ended() || ps.Phase == pod.PodPending {
		return err
	}
	// The pod's systemd, which kept its units' runs, is gone.
	outcomes, err := recordedOutcomes(context.Background(), nil, stateDir, m, ps)
	if err != nil {
		return err
	}
	code := record.PodExitCode(outcomes)
	if code == 0 {
		code = record.NoProcessCode
	}
	ps.ExitCode, ps.Phase, ps.FinishedAt = &code, pod.PodFailed, time.Now()
	if err := pod.WritePod(stateDir, ps); err != nil {
		return err
	}
	return record.MarkStopping(stateDir, name)
}

// killIsolatedApps sends SIGKILL to the main process of each app of
// isolated pod name that has not ended, through its systemd: an app that
// is recording its exit (ExecStopPost=) has no main process left.
func killIsolatedApps(stateDir, name string, apps []record.AppStatus) {
	pid, err := readContainerPID(stateDir, name)
	if err != nil {
		return
	}
	for _, a := range apps {
		boot.EnterCommand(pid, "systemctl", "kill", "--kill-who=main", "--signal=SIGKILL", pod.AppUnit(name, a.Name)).Run()
	}
}
