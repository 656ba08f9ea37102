package inject

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// writeSource writes an executable named name with the given content and
// returns its path and the name Install gives it.
func writeSource(t *testing.T, name, content string) (src, installed string) {
	t.Helper()
	src = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(src, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	return src, name + "-" + hex.EncodeToString(sum[:])[:16]
}

// checkInstalled checks that path is a regular 0755 file holding content.
func checkInstalled(t *testing.T, path, content string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: mode %v, want a regular file with mode 0755", path, fi.Mode())
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != content {
		t.Errorf("%s holds %q, %v; want %q", path, got, err, content)
	}
}

// dirNames lists dir, failing the test on error.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestInstall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	src, name := writeSource(t, "agent", "#!/bin/sh\necho agent v1\n")
	path, err := Install(t.Context(), dir, src)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, name) {
		t.Errorf("path = %s, want %s", path, filepath.Join(dir, name))
	}
	checkInstalled(t, path, "#!/bin/sh\necho agent v1\n")
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("dir: %v, %v; want created with mode 0755", fi.Mode(), err)
	}

	// Idempotent: the same content installs to the same file, untouched.
	before, _ := os.Stat(path)
	again, err := Install(t.Context(), dir, src)
	if err != nil || again != path {
		t.Fatalf("second Install = %s, %v; want %s", again, err, path)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Error("second Install rewrote the file")
	}

	// Installing the installed copy names it the same: no second suffix.
	if p, err := Install(t.Context(), dir, path); err != nil || p != path {
		t.Errorf("Install of the installed copy = %s, %v; want %s", p, err, path)
	}

	// New content gets a new name beside the old one.
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho agent v2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	v2, err := Install(t.Context(), dir, src)
	if err != nil || v2 == path {
		t.Fatalf("Install of new content = %s, %v", v2, err)
	}
	checkInstalled(t, v2, "#!/bin/sh\necho agent v2\n")
	if names := dirNames(t, dir); len(names) != 2 {
		t.Errorf("dir holds %v, want the two versions and no temp file", names)
	}
}

func TestInstallConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	content := strings.Repeat("binary content\n", 100000)
	src, name := writeSource(t, "agent", content)
	var wg sync.WaitGroup
	paths := make([]string, 8)
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = Install(t.Context(), dir, src)
		}()
	}
	wg.Wait()
	for i := range 8 {
		if errs[i] != nil || paths[i] != filepath.Join(dir, name) {
			t.Errorf("Install %d = %s, %v", i, paths[i], errs[i])
		}
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != name {
		t.Errorf("dir holds %v, want only %s", names, name)
	}
	checkInstalled(t, filepath.Join(dir, name), content)
}

func TestInstallReplaces(t *testing.T) {
	const content = "#!/bin/sh\necho ok\n"
	tests := []struct {
		name  string
		plant func(t *testing.T, target string)
	}{
		{"corrupt copy", func(t *testing.T, target string) {
			os.WriteFile(target, []byte("#!/bin/sh\necho evil\n"), 0o755)
		}},
		{"truncated copy", func(t *testing.T, target string) {
			os.WriteFile(target, []byte(content[:5]), 0o755)
		}},
		{"right content, writable by others", func(t *testing.T, target string) {
			os.WriteFile(target, []byte(content), 0o777)
			os.Chmod(target, 0o777)
		}},
		{"right content, not executable", func(t *testing.T, target string) {
			os.WriteFile(target, []byte(content), 0o644)
		}},
		{"symlink", func(t *testing.T, target string) {
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, target); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if got, _ := os.ReadFile(victim); string(got) != "precious" {
					t.Errorf("the symlink was followed: victim holds %q", got)
				}
			})
		}},
		{"fifo", func(t *testing.T, target string) {
			if err := syscall.Mkfifo(target, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bin")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			src, name := writeSource(t, "agent", content)
			target := filepath.Join(dir, name)
			tt.plant(t, target)
			path, err := Install(t.Context(), dir, src)
			if err != nil || path != target {
				t.Fatalf("Install = %s, %v; want %s", path, err, target)
			}
			checkInstalled(t, target, content)
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("dir holds %v, want only %s", names, name)
			}
		})
	}
}

func TestInstallRefuses(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o755)
	os.Symlink(real, filepath.Join(base, "link"))
	os.WriteFile(filepath.Join(base, "file"), nil, 0o644)
	os.Mkdir(filepath.Join(base, "open"), 0o755)
	os.Chmod(filepath.Join(base, "open"), 0o777)
	os.Mkdir(filepath.Join(base, "group"), 0o755)
	os.Chmod(filepath.Join(base, "group"), 0o775)
	other := filepath.Join(base, "other")
	os.Mkdir(other, 0o755)
	if os.Geteuid() == 0 {
		os.Chown(other, 1234, 1234)
	}
	src, _ := writeSource(t, "agent", "x")
	badName, _ := writeSource(t, "my agent", "x")
	// A FIFO without a writer blocked an open for reading for good.
	fifo := filepath.Join(base, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(fifo, filepath.Join(base, "fifo-link"))
	tests := []struct {
		name, dir, src, want string
	}{
		{"relative dir", "bin", src, "inject: dir bin: must be an absolute path"},
		{"symlinked dir", filepath.Join(base, "link"), src, "is a symlink"},
		{"dir is a file", filepath.Join(base, "file"), src, "file: not a directory"},
		{"world-writable dir", filepath.Join(base, "open"), src, "writable by group or others (mode 0777)"},
		{"group-writable dir", filepath.Join(base, "group"), src, "writable by group or others"},
		{"missing parent", filepath.Join(base, "none", "bin"), src, "no such file or directory"},
		{"source missing", real, filepath.Join(base, "nope"), "no such file or directory"},
		{"source a directory", real, base, ": not a regular file (it is a directory)"},
		{"source a FIFO", real, fifo, fifo + ": not a regular file (it is a FIFO)"},
		{"source a link to a FIFO", real, filepath.Join(base, "fifo-link"), ": not a regular file (it is a FIFO)"},
		{"source a device", real, "/dev/zero", "/dev/zero: not a regular file (it is a character device)"},
		{"source name", real, badName, `name "my agent" must match`},
	}
	if os.Geteuid() == 0 {
		tests = append(tests, struct{ name, dir, src, want string }{"dir owned by another user", other, src, "owned by uid 1234"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, err := Install(t.Context(), tt.dir, tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Install = %s, %v; want an error containing %q", path, err, tt.want)
			}
			if path != "" {
				t.Errorf("Install returned path %s with its error", path)
			}
		})
	}
	if names := dirNames(t, real); len(names) != 0 {
		t.Errorf("refused installs left %v", names)
	}
}

// TestInstallKeepsPrivacy installs sources of several modes: the copy
// grants group and others read and execute only where the source grants
// them read, so a file only root may read (/etc/shadow) is not installed
// world-readable.
func TestInstallKeepsPrivacy(t *testing.T) {
	for _, tt := range []struct {
		src, want os.FileMode
	}{
		{0o600, 0o700},
		{0o640, 0o750},
		{0o604, 0o705},
		{0o644, 0o755},
		{0o711, 0o700},
		{0o755, 0o755},
		{0o4755, 0o755},
	} {
		t.Run(tt.src.String(), func(t *testing.T) {
			content := "secret " + tt.src.String()
			src, name := writeSource(t, "shadow", content)
			if err := os.Chmod(src, tt.src); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "bin")
			path, err := Install(t.Context(), dir, src)
			if err != nil || path != filepath.Join(dir, name) {
				t.Fatalf("Install = %s, %v", path, err)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode() != tt.want {
				t.Fatalf("source mode %v installed with mode %v, %v; want %v", tt.src, fi.Mode(), err, tt.want)
			}
			// Installed again, the copy is kept as it is.
			if again, err := Install(t.Context(), dir, src); err != nil || again != path {
				t.Errorf("second Install = %s, %v; want %s", again, err, path)
			}
		})
	}
}

// TestInstallCanceled installs with a context already done: Install
// returns its error and leaves nothing in dir.
func TestInstallCanceled(t *testing.T) {
	src, _ := writeSource(t, "agent", "x")
	dir := filepath.Join(t.TempDir(), "bin")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	path, err := Install(ctx, dir, src)
	if !errors.Is(err, context.Canceled) || path != "" {
		t.Fatalf("Install = %q, %v; want context.Canceled", path, err)
	}
	if _, err := os.Lstat(dir); err == nil {
		if names := dirNames(t, dir); len(names) != 0 {
			t.Errorf("a canceled Install left %v", names)
		}
	}
}

func TestSelf(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	path, err := Self(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	want, _ := os.ReadFile(exe)
	checkInstalled(t, path, string(want))
	if !strings.HasPrefix(filepath.Base(path), filepath.Base(exe)+"-") {
		t.Errorf("Self installed %s, want a name starting %s-", path, filepath.Base(exe))
	}
}
