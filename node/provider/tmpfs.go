package provider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts, in the manager's view, a tmpfs of its size at each
// of vols that is a memory-backed emptyDir with a sizeLimit, unless it is
// mounted already (by the node's earlier run). The manager's view is
// where the apps' units take their mounts from; a mount made in the
// node's own mount namespace would not reach a manager with one of its
// own, such as the embedded manager.
func (e *engine) mountTmpfs(ctx context.Context, vols map[string]*volume) error {
	for _, v := range vols {
		if v.tmpfsSize == 0 {
			continue
		}
		err := e.inManagerMounts(ctx, func() error {
			var st, up unix.Stat_t
			if err := unix.Stat(v.dir, &st); err != nil {
				return err
			}
			if err := unix.Stat(filepath.Dir(v.dir), &up); err != nil {
				return err
			}
			if st.Dev != up.Dev {
				return nil
			}
			return unix.Mount("tmpfs", v.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0777", v.tmpfsSize))
		})
		if err != nil {
			return fmt.Errorf("mount a tmpfs of %d bytes at %s: %w", v.tmpfsSize, v.dir, err)
		}
	}
	return nil
}

// removeMemoryDir removes the memory-backed emptyDirs of unitrun pod
// name, unmounting, in the manager's view, those that are tmpfs mounts of
// their own.
func (e *engine) removeMemoryDir(ctx context.Context, name string) error {
	dir := memoryDir(name)
	vols, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = e.inManagerMounts(ctx, func() error {
		for _, v := range vols {
			// EINVAL: not a mount point.
			if err := unix.Unmount(filepath.Join(dir, v.Name()), unix.MNT_DETACH); err != nil && err != unix.EINVAL {
				return err
			}
		}
		return nil
	})
	return errors.Join(err, os.RemoveAll(dir))
}

// inManagerMounts runs f in the manager's mount namespace: at once if it
// is the node's, else on a thread of its own that enters it and ends
// with f (a thread that has left the process's file system context
// serves nothing else).
//
// The node's namespace is the calling thread's, not the main thread's
// (/proc/self): Go does not end the main thread when f's goroutine ran
// on it, but parks it for good, left in the manager's namespace.
func (e *engine) inManagerMounts(ctx context.Context, f func() error) error {
	pid, err := e.conn.PID(ctx)
	if err != nil {
		return err
	}
	ns := fmt.Sprintf("/proc/%d/ns/mnt", pid)
	theirs, err := os.Stat(ns)
	if err != nil {
		return err
	}
	ours, err := os.Stat("/proc/thread-self/ns/mnt")
	if err != nil {
		return err
	}
	if os.SameFile(theirs, ours) {
		return f()
	}
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine.
		runtime.LockOSThread()
		fd, err := unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- err
			return
		}
		defer unix.Close(fd)
		// A thread that shares its file system context with others
		// cannot enter another mount namespace.
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			done <- err
			return
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}
