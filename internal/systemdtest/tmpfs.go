package systemdtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MountTmpfs mounts a tmpfs of the given size (as mount's size= option)
// on a new directory, mode 0700, which it returns, until the test's end;
// it skips the test when it cannot mount (it needs root). Tests fill it
// to see what a full disk does.
func MountTmpfs(t testing.TB, size string) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "unitrun-test-fs", mnt).CombinedOutput(); err != nil {
		t.Skipf("this test needs to mount a tmpfs (root): mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
	return mnt
}
