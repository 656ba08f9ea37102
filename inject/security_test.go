package inject

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestSecurityPlantedCopies plants, at the name Install gives, files with
// the right content that Install must not trust: one owned by another
// user, and one with the setuid, setgid or sticky bit. Install replaces
// each with its own plain 0755 copy owned by the caller.
func TestSecurityPlantedCopies(t *testing.T) {
	const content = "#!/bin/sh\necho ok\n"
	plants := map[string]func(t *testing.T, target string){
		"setuid": func(t *testing.T, target string) { plantMode(t, target, content, os.ModeSetuid) },
		"setgid": func(t *testing.T, target string) { plantMode(t, target, content, os.ModeSetgid) },
		"sticky": func(t *testing.T, target string) { plantMode(t, target, content, os.ModeSticky) },
	}
	if os.Geteuid() == 0 {
		plants["owned by another user"] = func(t *testing.T, target string) {
			plantMode(t, target, content, 0)
			if err := os.Chown(target, 1234, 1234); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bin")
			os.Mkdir(dir, 0o755)
			src, installed := writeSource(t, "agent", content)
			target := filepath.Join(dir, installed)
			plant(t, target)
			if _, err := Install(t.Context(), dir, src); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(target)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != 0o755 || !ownedByUs(fi) {
				t.Errorf("after Install: mode %v, owner %d: the planted copy was kept", fi.Mode(), owner(fi))
			}
			checkInstalled(t, target, content)
		})
	}
}

func plantMode(t *testing.T, target, content string, extra os.FileMode) {
	t.Helper()
	if err := os.WriteFile(target, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o755|extra); err != nil {
		t.Fatal(err)
	}
}

// TestSecuritySourceNames gives Install sources whose names would climb out
// of the dir, pass for an option, hide, or break a line: each is refused
// and nothing is written, not even the dir.
func TestSecuritySourceNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	for _, name := range []string{"-rf", ".hidden", "a\nb", "a b", "..", "a;b", "a$b", "é"} {
		src := filepath.Join(t.TempDir(), name)
		if name == ".." {
			src = t.TempDir() + "/.."
		} else if err := os.WriteFile(src, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if path, err := Install(t.Context(), dir, src); err == nil {
			t.Errorf("Install(%q) = %s, want a refusal", name, path)
		}
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused installs left their dir %s behind (%v)", dir, err)
	}
}

// TestSecuritySourceSwapped rewrites the source while Installs copy it:
// whatever each Install returns, the file at a returned path holds exactly
// the content its name's hash names, complete.
func TestSecuritySourceSwapped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	src := filepath.Join(t.TempDir(), "agent")
	versions := []string{strings.Repeat("a", 1<<20), strings.Repeat("b", 3<<20)}
	os.WriteFile(src, []byte(versions[0]), 0o755)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			os.WriteFile(src, []byte(versions[i%2]), 0o755)
		}
	}()
	for range 50 {
		path, err := Install(t.Context(), dir, src)
		if err != nil {
			continue // "changed while being copied" is a defence too
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if want := "agent-" + hex.EncodeToString(sum[:])[:hashLen]; filepath.Base(path) != want {
			t.Errorf("%s holds content whose name would be %s", path, want)
		}
	}
	close(stop)
	wg.Wait()
}
