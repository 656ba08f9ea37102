package pod

import (
	"fmt"
	"github.com/unitrun/unitrun/pod/record"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestSpecRoundTrip checks that the spec file gives back every manifest of
// testdata as Parse returned it, and that a pod without one (created by a
// unitrun that wrote none) is read from its manifest.
func TestSpecRoundTrip(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests in testdata: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			state := t.TempDir()
			dir := record.Dir(state, want.Name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, manifestFile), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := writeSpec(state, want); err != nil {
				t.Fatal(err)
			}
			if got, err := readSpec(state, want.Name); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("spec file read back:\n%+v, %v\nwant\n%+v", got, err, want)
			}
			if err := os.Remove(filepath.Join(dir, record.SpecFile)); err != nil {
				t.Fatal(err)
			}
			if got, err := readSpec(state, want.Name); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("pod without a spec file:\n%+v, %v\nwant\n%+v", got, err, want)
			}
		})
	}
}

// BenchmarkLoadSpec compares what a hook pays to learn a pod of 100 apps:
// its spec file against its manifest parsed again.
func BenchmarkLoadSpec(b *testing.B) {
	data := []byte("name: b100\napps:\n")
	for i := range 100 {
		data = fmt.Appendf(data, "  - name: a%d\n    exec: [/bin/true]\n", i)
	}
	m, err := Parse(data)
	if err != nil {
		b.Fatal(err)
	}
	state := b.TempDir()
	if err := os.MkdirAll(record.Dir(state, m.Name), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(record.Dir(state, m.Name), manifestFile), data, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := writeSpec(state, m); err != nil {
		b.Fatal(err)
	}
	b.Run("spec", func(b *testing.B) {
		for b.Loop() {
			if _, err := readSpec(state, m.Name); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("manifest", func(b *testing.B) {
		for b.Loop() {
			if _, err := Load(filepath.Join(record.Dir(state, m.Name), manifestFile)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// With the pod's status as its creation writes it: loadState, which
	// the commands use, and loadSpec, which the hooks use.
	ps := PodStatus{Name: m.Name, Phase: PodPending, ExitPolicy: record.FirstFailure, Isolation: NoIsolation, CreatedAt: time.Now()}
	for _, a := range m.Apps {
		ps.Apps = append(ps.Apps, record.AppStatus{Name: a.Name, State: record.AppWaiting})
	}
	if err := WritePod(state, ps); err != nil {
		b.Fatal(err)
	}
	b.Run("state", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := LoadState(state, m.Name); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hook", func(b *testing.B) {
		for b.Loop() {
			if _, err := LoadSpec(state, m.Name); err != nil {
				b.Fatal(err)
			}
		}
	})
}
