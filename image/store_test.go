package image_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/image/registry"
)

func hexes(ids ...string) []string {
	var hs []string
	for _, id := range ids {
		hs = append(hs, strings.TrimPrefix(id, "sha256:"))
	}
	slices.Sort(hs)
	return hs
}

func TestRemoveRefusedWhileLeasedThenPrune(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	shared := imagetest.Layer{{Path: "shared", Body: strings.Repeat("s", 10000)}}
	refA := reg.Push(t, "a:1", imagetest.Image{Layers: []imagetest.Layer{shared, {{Path: "a", Body: "a"}}}})
	refB := reg.Push(t, "b:1", imagetest.Image{Layers: []imagetest.Layer{shared, {{Path: "b", Body: "b"}}}})
	s := imagetest.Store(t)
	a := imagetest.Pull(t, s, refA, image.PullOptions{})
	b := imagetest.Pull(t, s, refB, image.PullOptions{})
	if got := imagetest.Entries(t, s, "layers/sha256"); !slices.Equal(got, hexes(a.Layers[0], a.Layers[1], b.Layers[1])) {
		t.Fatalf("layers %q: want the shared layer once and one of each image", got)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	before, err := s.Size()
	if err != nil || before <= 10000 {
		t.Fatalf("Size = %d, %v", before, err)
	}

	if err := s.Lease("pod/web", a.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.Remove(refA)
	var inUse *image.InUseError
	if !errors.As(err, &inUse) || !strings.Contains(err.Error(), "pod/web") {
		t.Fatalf("Remove of a leased image: %v, want refused naming pod/web", err)
	}
	if _, err := s.Lookup(refA); err != nil {
		t.Errorf("the refused removal removed the image: %v", err)
	}

	if _, err := s.Remove(b.ID[:19]); err != nil {
		t.Fatalf("Remove by ID prefix: %v", err)
	}
	if _, err := s.Lookup(refB); !errors.Is(err, image.ErrNotFound) {
		t.Errorf("Lookup after Remove: %v, want ErrNotFound", err)
	}
	if got := imagetest.Entries(t, s, "layers/sha256"); !slices.Equal(got, hexes(a.Layers...)) {
		t.Errorf("layers after removing b: %q, want a's (the shared one kept)", got)
	}

	// Prune keeps what a lease holds.
	p, err := s.Prune(context.Background())
	if err != nil || len(p.Images) != 0 {
		t.Fatalf("Prune with a leased image: %+v, %v; want nothing removed", p, err)
	}
	if err := s.Release("pod/web"); err != nil {
		t.Fatal(err)
	}
	p, err = s.Prune(context.Background())
	if err != nil || len(p.Images) != 1 || p.Images[0].ID != a.ID || p.Bytes <= 10000 {
		t.Fatalf("Prune: %+v, %v; want a removed and its bytes freed", p, err)
	}
	for _, sub := range []string{"layers/sha256", "blobs/sha256", "images", "refs", "tmp"} {
		if got := imagetest.Entries(t, s, sub); len(got) != 0 {
			t.Errorf("%s after Prune: %q, want empty", sub, got)
		}
	}
	if after, err := s.Size(); err != nil || after >= before {
		t.Errorf("Size after Prune = %d, %v; want less than %d", after, err, before)
	}
}

func TestRemoveNameKeepsImageOfOtherNames(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	d := imagetest.Image{Layers: []imagetest.Layer{{{Path: "f", Body: "x"}}}}
	ref1 := reg.Push(t, "n:1", d)
	ref2 := reg.Push(t, "n:2", d)
	s := imagetest.Store(t)
	img := imagetest.Pull(t, s, ref1, image.PullOptions{})
	if imagetest.Pull(t, s, ref2, image.PullOptions{}).ID != img.ID {
		t.Fatal("one image under two tags got two IDs")
	}
	if err := s.Lease("pod/x", img.ID); err != nil {
		t.Fatal(err)
	}
	if removed, err := s.Remove(ref1); err != nil || removed != nil {
		t.Fatalf("Remove of one of two names: %v, %v; want the name alone removed", removed, err)
	}
	got, err := s.Lookup(ref2)
	if err != nil || !slices.Equal(got.Names, []string{ref2}) {
		t.Errorf("after removing %s: %v, %v; want the image named %s", ref1, got, err, ref2)
	}
	if _, err := s.Remove(ref2); err == nil {
		t.Errorf("Remove of the last name of a leased image succeeded")
	}
}

func TestPullTakesLease(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "leased:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "f", Body: "x"}}}})
	s := imagetest.Store(t)
	img := imagetest.Pull(t, s, ref, image.PullOptions{Lease: "pod/a"}) // fetched
	imagetest.Pull(t, s, ref, image.PullOptions{Lease: "pod/b"})        // found in the store
	_, err := s.Remove(ref)
	var inUse *image.InUseError
	if !errors.As(err, &inUse) || !slices.Equal(inUse.Holders, []string{"pod/a", "pod/b"}) {
		t.Fatalf("Remove after pulls with leases: %v; want refused naming pod/a and pod/b", err)
	}
	if p, err := s.Prune(context.Background()); err != nil || len(p.Images) != 0 {
		t.Errorf("Prune took a leased image: %+v, %v", p, err)
	}
	s.Release("pod/a")
	s.Release("pod/b")
	if removed, err := s.Remove(ref); err != nil || removed.ID != img.ID {
		t.Errorf("Remove once released: %v, %v", removed, err)
	}
}

// TestPruneRemovesPullLocks pulls an image and fails to pull another:
// each name leaves its lock file, and Prune removes them.
func TestPruneRemovesPullLocks(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "locked:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "f", Body: "x"}}}})
	s := imagetest.Store(t)
	imagetest.Pull(t, s, ref, image.PullOptions{})
	if _, err := registry.Pull(context.Background(), s, reg.Host+"/locked:2", image.PullOptions{}); !errors.Is(err, image.ErrUnknown) {
		t.Fatalf("pull of a missing tag: %v", err)
	}
	pullLocks := func() []string {
		return slices.DeleteFunc(imagetest.Entries(t, s, "locks"), func(n string) bool { return !strings.HasPrefix(n, "pull-") })
	}
	if got := pullLocks(); len(got) != 2 {
		t.Fatalf("locks after two pulls: %q; want one per name", got)
	}
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := pullLocks(); len(got) != 0 {
		t.Errorf("pull locks after Prune: %q; want none", got)
	}
	imagetest.Pull(t, s, ref, image.PullOptions{}) // a pull makes its lock again
}

// While the store is held, a Prune removes nothing and waits (with its
// context ended, it gives up at once), pulls go on, and Remove removes an
// image no lease holds but leaves its layers; once released, Prune
// removes the images no lease holds and their layers.
func TestHoldKeepsPrune(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	refA := reg.Push(t, "held:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "a", Body: "a"}}}})
	refB := reg.Push(t, "held:2", imagetest.Image{Layers: []imagetest.Layer{{{Path: "b", Body: "b"}}}})
	s := imagetest.Store(t)
	a := imagetest.Pull(t, s, refA, image.PullOptions{})
	release, err := s.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Hold(context.Background()) // as a second creation would
	if err != nil {
		t.Fatal(err)
	}
	again()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if p, err := s.Prune(ended); !errors.Is(err, context.Canceled) || p != nil {
		t.Fatalf("Prune while held: %+v, %v; want it to wait (here: give up as its context ended)", p, err)
	}
	b := imagetest.Pull(t, s, refB, image.PullOptions{}) // a pull while held
	if _, err := s.Remove(refB); err != nil {
		t.Fatalf("Remove while held: %v", err)
	}
	if got, want := imagetest.Entries(t, s, "layers/sha256"), hexes(a.Layers[0], b.Layers[0]); !slices.Equal(got, want) {
		t.Errorf("layers while held, after Remove: %q, want %q (both kept)", got, want)
	}
	if _, err := s.Lookup(refA); err != nil {
		t.Errorf("the held store lost an image: %v", err)
	}
	release()
	p, err := s.Prune(context.Background())
	if err != nil || len(p.Images) != 1 || p.Images[0].ID != a.ID {
		t.Fatalf("Prune once released: %+v, %v; want %s removed", p, err, a.ID)
	}
	if got := imagetest.Entries(t, s, "layers/sha256"); len(got) != 0 {
		t.Errorf("layers after Prune: %q, want none", got)
	}
}
