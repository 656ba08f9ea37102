package systemdtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Rootfs builds a root directory holding /bin/sh and the other
// binaries named, the libraries ldd says they need, and the mount points
// of /proc, /dev and /sys.
func Rootfs(t *testing.T, binaries ...string) string {
	t.Helper()
	root := t.TempDir()
	var files []string
	for _, bin := range append([]string{"/bin/sh"}, binaries...) {
		files = append(files, bin)
		out, err := exec.Command("ldd", bin).Output()
		if err != nil {
			t.Fatalf("ldd %s: %v", bin, err)
		}
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "/") {
				files = append(files, f)
			}
		}
	}
	for _, d := range []string{"proc", "dev", "sys", "run", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		real, err := filepath.EvalSymlinks(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(real)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
