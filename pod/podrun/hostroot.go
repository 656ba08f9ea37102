package podrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/manager/boot"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// MountRoot is "unitrun pod unit-hook mount-root", the "+" ExecStartPre=
// of an app of a host pod whose root is an image
// ([pod.Manifest.HostImageRoot]), which systemd runs in the manager's
// mount namespace: it mounts the app's image overlay at its root, then
// binds the host's /proc, and /dev and /sys with what is mounted under
// them, into it, as an isolated pod's container does in its own
// namespace. A root already mounted (a restart of the app) is left as it
// is. Its failure fails the run's start, which the exit hook records
// with the reason ([startFailed]).
// The pod's shutdown hook detaches the root ([unmountRoots]).
func MountRoot(stateDir, name, app string) error {
	m, a, err := pod.LoadApp(stateDir, name, app)
	if err != nil {
		return err
	}
	if !m.HostImageRoot(a) {
		return nil
	}
	s, err := image.Open(m.ImageDir)
	if err != nil {
		return err
	}
	img, err := s.Lookup(a.ImageID)
	if err != nil {
		return fmt.Errorf("image %s (%s): %w", a.Image, a.ImageID, err)
	}
	o := imageOverlay(stateDir, name, app, s, img)
	if mounted, err := mountPoint(o.Root); err != nil || mounted {
		return err
	}
	if err := mountOverlay(o); err != nil {
		return startFailed(stateDir, name, app, fmt.Sprintf("mount the root from image %s: %v", a.Image, err))
	}
	for _, b := range []struct {
		dir   string
		flags uintptr
	}{{"/proc", unix.MS_BIND}, {"/dev", unix.MS_BIND | unix.MS_REC}, {"/sys", unix.MS_BIND | unix.MS_REC}} {
		target := filepath.Join(o.Root, b.dir)
		err := os.MkdirAll(target, 0o755)
		if err == nil {
			err = unix.Mount(b.dir, target, "", b.flags, "")
		}
		if err != nil {
			unix.Unmount(o.Root, unix.MNT_DETACH)
			return startFailed(stateDir, name, app, fmt.Sprintf("bind %s into the root from image %s: %v", b.dir, a.Image, err))
		}
	}
	return nil
}

// mountOverlay mounts o, its lower layers named relative to their
// directory ([boot.Overlay.Options]), from which it mounts.
func mountOverlay(o boot.Overlay) error {
	dir, opts, err := o.Options()
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(dir); err != nil {
		return err
	}
	defer os.Chdir(wd)
	return unix.Mount("overlay", o.Root, "overlay", 0, opts)
}

// mountPoint reports whether dir is a mount point: on another device
// than its parent.
func mountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// unmountRoots detaches the image roots of the apps of host pod m that
// are mounted, with what is bound under them: the pod's shutdown hook
// runs it in the manager's mount namespace.
func unmountRoots(stateDir string, m *pod.Manifest) error {
	var errs []error
	for i := range m.Apps {
		if !m.HostImageRoot(&m.Apps[i]) {
			continue
		}
		root := pod.ImageRoot(stateDir, m.Name, m.Apps[i].Name).Root()
		if mounted, err := mountPoint(root); err != nil || !mounted {
			continue
		}
		if err := unix.Unmount(root, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount the root of app %s: %w", m.Apps[i].Name, err))
		}
	}
	return errors.Join(errs...)
}

// checkNoMounts refuses the removal of pod name while something is
// mounted under its state directory in the manager's mount namespace
// (an image root that a crash left mounted): a removal through it would
// write into the image's writable layer, and fail on the mount point.
func (r *Runner) checkNoMounts(ctx context.Context, name string) error {
	pid, err := r.managerPID(ctx)
	if err != nil || pid == 0 {
		return err
	}
	dir := record.Dir(r.StateDir, name)
	mounts, err := mountsUnder(pid, dir)
	if err != nil || len(mounts) == 0 {
		return err
	}
	return fmt.Errorf("pod %s cannot be removed: %s is still mounted in the manager's mount namespace (its pod ended without unmounting it); unmount it (nsenter --mount --target %d umount --lazy %s), then remove the pod again", name, mounts[0], pid, mounts[0])
}

// managerPID is the PID of r's manager, in the process's PID namespace:
// the process of its init.scope; 0 where it has none.
func (r *Runner) managerPID(ctx context.Context) (int, error) {
	procs, err := r.Mgr.UnitProcesses(ctx, "init.scope")
	if err != nil || len(procs) == 0 {
		return 0, nil
	}
	return int(procs[0].PID), nil
}

// mountsUnder lists the mount points under dir in the mount namespace
// of process pid.
func mountsUnder(pid int, dir string) ([]string, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(unescapeMountinfo(fields[4]), dir+"/") {
			found = append(found, unescapeMountinfo(fields[4]))
		}
	}
	return found, sc.Err()
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
