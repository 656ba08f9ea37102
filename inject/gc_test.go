package inject

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"
)

func TestGC(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	srcA, _ := writeSource(t, "agent", "v1")
	srcB, _ := writeSource(t, "agent", "v2")
	srcC, _ := writeSource(t, "helper", "h1")
	a, err := Install(t.Context(), dir, srcA)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Install(t.Context(), dir, srcB)
	c, _ := Install(t.Context(), dir, srcC)

	outside := filepath.Join(t.TempDir(), "outside-0123456789abcdef")
	os.WriteFile(outside, []byte("keep"), 0o755)
	plant := map[string]func(string) error{
		// Not of the naming form: kept.
		"agent":                  func(p string) error { return os.WriteFile(p, nil, 0o755) },
		"agent-0123456789ABCDEF": func(p string) error { return os.WriteFile(p, nil, 0o755) },
		"agent-0123456789abcde":  func(p string) error { return os.WriteFile(p, nil, 0o755) },
		"notes.txt":              func(p string) error { return os.WriteFile(p, nil, 0o644) },
		// Of the form but not regular files: kept, never followed.
		"link-0123456789abcdef":   func(p string) error { return os.Symlink(outside, p) },
		"subdir-0123456789abcdef": func(p string) error { return os.Mkdir(p, 0o755) },
		// Temp files of unfinished Installs: a fresh one is kept, a stale one removed.
		".agent-0123456789abcdef.tmp-00000001": func(p string) error { return os.WriteFile(p, nil, 0o600) },
		".agent-0123456789abcdef.tmp-00000002": func(p string) error {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				return err
			}
			old := time.Now().Add(-2 * staleTemp)
			return os.Chtimes(p, old, old)
		},
	}
	for name, f := range plant {
		if err := f(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	var asked []string
	removed, err := GC(dir, func(p string) bool {
		asked = append(asked, p)
		return p == b
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(removed)
	want := []string{filepath.Join(dir, ".agent-0123456789abcdef.tmp-00000002"), a, c}
	sort.Strings(want)
	if !reflect.DeepEqual(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	sort.Strings(asked)
	wantAsked := []string{a, b, c}
	sort.Strings(wantAsked)
	if !reflect.DeepEqual(asked, wantAsked) {
		t.Errorf("inUse was asked about %v, want %v", asked, wantAsked)
	}
	left := dirNames(t, dir)
	wantLeft := []string{".agent-0123456789abcdef.tmp-00000001", "agent", "agent-0123456789ABCDEF", "agent-0123456789abcde", filepath.Base(b), "link-0123456789abcdef", "notes.txt", "subdir-0123456789abcdef"}
	sort.Strings(wantLeft)
	if !reflect.DeepEqual(left, wantLeft) {
		t.Errorf("left %v, want %v", left, wantLeft)
	}
	if got, _ := os.ReadFile(outside); string(got) != "keep" {
		t.Error("GC touched a symlink's target")
	}
}

func TestGCRefusesSymlinkDir(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	src, _ := writeSource(t, "agent", "v1")
	p, err := Install(t.Context(), real, src)
	if err != nil {
		t.Fatal(err)
	}
	os.Symlink(real, filepath.Join(base, "link"))
	if _, err := GC(filepath.Join(base, "link"), func(string) bool { return false }); err == nil {
		t.Error("GC accepted a symlinked dir")
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("GC through a symlink removed %s", p)
	}
}

// A binary and its companion (as Self installs it) go together: GC keeps
// both while either is in use, removes both once neither is, and removes
// a companion whose binary is gone.
func TestGCCompanions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	hookSrc, _ := writeSource(t, "unitrun-hook", "hook")
	install := func(content string) (bin, hook string) {
		t.Helper()
		src, _ := writeSource(t, "unitrun", content)
		bin, err := Install(t.Context(), dir, src)
		if err != nil {
			t.Fatal(err)
		}
		hook = bin + "-hook"
		if err := installCompanion(t.Context(), hookSrc, hook); err != nil {
			t.Fatal(err)
		}
		checkInstalled(t, hook, "hook")
		return bin, hook
	}
	bin1, hook1 := install("v1")
	bin2, hook2 := install("v2")
	bin3, hook3 := install("v3")
	if err := os.Remove(bin3); err != nil {
		t.Fatal(err)
	}
	inUse := map[string]bool{bin1: true, hook2: true}
	removed, err := GC(dir, func(p string) bool { return inUse[p] })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{hook3}; !reflect.DeepEqual(removed, want) {
		t.Errorf("GC with %s and %s in use removed %v; want %v", bin1, hook2, removed, want)
	}
	removed, err = GC(dir, func(string) bool { return false })
	sort.Strings(removed)
	want := []string{bin1, hook1, bin2, hook2}
	sort.Strings(want)
	if err != nil || !reflect.DeepEqual(removed, want) {
		t.Errorf("GC with nothing in use removed %v, %v; want %v", removed, err, want)
	}
}
