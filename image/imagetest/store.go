package imagetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/registry"
)

// Store opens an image store in a directory of t's own.
func Store(t testing.TB) *image.Store {
	t.Helper()
	s, err := image.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Pull pulls ref into s with o, failing t if it cannot.
func Pull(t testing.TB, s *image.Store, ref string, o image.PullOptions) *image.Image {
	t.Helper()
	img, err := registry.Pull(context.Background(), s, ref, o)
	if err != nil {
		t.Fatalf("Pull(%s): %v", ref, err)
	}
	return img
}

// Entries returns the names in the store's subdirectory sub.
func Entries(t testing.TB, s *image.Store, sub string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(s.Dir(), sub))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
