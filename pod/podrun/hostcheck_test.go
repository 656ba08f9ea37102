package podrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A workingDir that does not exist is refused by Check, in the host's
// root or in the app's rootfs, and made by CheckMakingDirs, there.
func TestCheckMakingDirs(t *testing.T) {
	host := filepath.Join(t.TempDir(), "made", "here")
	root := t.TempDir()
	manifest := []byte(`
name: dirs
isolation: namespaces
apps:
  - name: host
    exec: ["/bin/true"]
    workingDir: ` + host + `
  - name: rooted
    exec: ["/bin/true"]
    rootfs: ` + root + `
    workingDir: /srv/app
`)
	err := Check(manifest)
	for _, want := range []string{`apps[0].workingDir "` + host + `": no such directory`, `apps[1].workingDir "/srv/app": no such directory in rootfs`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want it to say %s", err, want)
		}
	}
	if err := CheckMakingDirs(manifest); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{host, filepath.Join(root, "srv", "app")} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v; want a directory of mode 0755", dir, err)
		}
	}
	if err := Check(manifest); err != nil {
		t.Errorf("Check once the directories are made: %v", err)
	}
}
