package registry_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/image/registry"
)

// randomBody is n bytes that do not compress.
func randomBody(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return string(b)
}

// layerDigests returns the digests and diff IDs of img's layers.
func layerDigests(t *testing.T, img v1.Image) (digests, diffIDs []string, blobs [][]byte) {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		d, _ := l.Digest()
		diff, _ := l.DiffID()
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		digests, diffIDs, blobs = append(digests, d.String()), append(diffIDs, diff.String()), append(blobs, b)
	}
	return digests, diffIDs, blobs
}

// blobCounter counts the GETs of each blob a registry serves.
type blobCounter struct {
	mu   sync.Mutex
	gets map[string]int
}

func (c *blobCounter) wrap(w http.ResponseWriter, r *http.Request, registry http.Handler) {
	if i := strings.Index(r.URL.Path, "/blobs/"); i >= 0 && r.Method == http.MethodGet {
		c.mu.Lock()
		c.gets[r.URL.Path[i+len("/blobs/"):]]++
		c.mu.Unlock()
	}
	registry.ServeHTTP(w, r)
}

func (c *blobCounter) count(digest string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[digest]
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestPullKilledHalfwayResumes(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	built := imagetest.Build(t, imagetest.Image{Layers: []imagetest.Layer{
		{{Path: "one", Body: randomBody(t, 1<<20)}},
		{{Path: "two", Body: randomBody(t, 1<<20)}},
	}})
	ref := reg.PushImage(t, "big:1", built)
	digests, diffIDs, blobs := layerDigests(t, built)
	s := imagetest.Store(t)
	firstLayer := filepath.Join(s.Dir(), "layers/sha256", strings.TrimPrefix(diffIDs[0], "sha256:"))

	halfSent := make(chan struct{})
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		if !strings.HasSuffix(r.URL.Path, "/blobs/"+digests[1]) {
			registry.ServeHTTP(w, r)
			return
		}
		// The second layer waits for the first to be whole in the store,
		// then stops halfway until the pulling process is killed.
		for !exists(firstLayer) {
			time.Sleep(10 * time.Millisecond)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(blobs[1])))
		w.Write(blobs[1][:len(blobs[1])/2])
		w.(http.Flusher).Flush()
		close(halfSent)
		<-r.Context().Done()
	})
	cmd := pullProcess(s.Dir(), ref, t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-halfSent
	cmd.Process.Kill()
	cmd.Wait()

	if _, err := s.Lookup(ref); !errors.Is(err, image.ErrNotFound) {
		t.Errorf("after the kill, Lookup: %v; want no image", err)
	}
	if got := imagetest.Entries(t, s, "images"); len(got) != 0 {
		t.Errorf("after the kill, images/ holds %q", got)
	}
	if !exists(firstLayer) || exists(filepath.Join(s.Dir(), "layers/sha256", strings.TrimPrefix(diffIDs[1], "sha256:"))) {
		t.Fatalf("after the kill: want the first layer whole in the store and not the second")
	}

	c := &blobCounter{gets: map[string]int{}}
	reg.SetWrap(c.wrap)
	img := imagetest.Pull(t, s, ref, image.PullOptions{})
	if n := c.count(digests[0]); n != 0 {
		t.Errorf("the resumed pull fetched the first layer again (%d times)", n)
	}
	if n := c.count(digests[1]); n != 1 {
		t.Errorf("the resumed pull fetched the second layer %d times, want once", n)
	}
	if got := readIn(t, s.LayerDirs(img), "two"); len(got) != 1<<20 {
		t.Errorf("the second layer's file has %d bytes, want 1 MiB", len(got))
	}
	if got := imagetest.Entries(t, s, "tmp"); len(got) != 0 {
		t.Errorf("tmp/ after the resumed pull: %q; want what the killed pull left removed", got)
	}
}

func TestPullsFromSeveralProcessesFetchOnce(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	built := imagetest.Build(t, imagetest.Image{Layers: []imagetest.Layer{
		{{Path: "one", Body: randomBody(t, 1<<18)}},
		{{Path: "two", Body: randomBody(t, 1<<18)}},
	}})
	ref := reg.PushImage(t, "same:1", built)
	digests, _, _ := layerDigests(t, built)
	s := imagetest.Store(t)
	ready := t.TempDir()
	const procs = 3
	c := &blobCounter{gets: map[string]int{}}
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		// The first process to ask waits until every process is about
		// to pull, so that they pull at once.
		for len(entriesOf(ready)) < procs {
			time.Sleep(10 * time.Millisecond)
		}
		c.wrap(w, r, registry)
	})
	var cmds []interface{ Wait() error }
	for range procs {
		cmd := pullProcess(s.Dir(), ref, ready)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("a pulling process: %v", err)
		}
	}
	for _, d := range digests {
		if n := c.count(d); n != 1 {
			t.Errorf("layer %s fetched %d times by %d processes, want once", d, n, procs)
		}
	}
	if _, err := s.Lookup(ref); err != nil {
		t.Error(err)
	}
}

func entriesOf(dir string) []os.DirEntry {
	es, _ := os.ReadDir(dir)
	return es
}

func TestPullRefusesCorruptedBlob(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	built := imagetest.Build(t, imagetest.Image{Layers: []imagetest.Layer{{{Path: "f", Body: randomBody(t, 4096)}}}})
	ref := reg.PushImage(t, "bad:1", built)
	digests, _, blobs := layerDigests(t, built)
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		if !strings.HasSuffix(r.URL.Path, "/blobs/"+digests[0]) {
			registry.ServeHTTP(w, r)
			return
		}
		wrong := slices.Clone(blobs[0])
		wrong[len(wrong)-20] ^= 0xff // the same size, one byte changed
		w.Header().Set("Content-Length", strconv.Itoa(len(wrong)))
		w.Write(wrong)
	})
	s := imagetest.Store(t)
	_, err := registry.Pull(context.Background(), s, ref, image.PullOptions{})
	if err == nil || !strings.Contains(err.Error(), digests[0]) {
		t.Fatalf("pull of a corrupted blob: %v; want refused naming its digest", err)
	}
	if _, err := s.Lookup(ref); !errors.Is(err, image.ErrNotFound) {
		t.Errorf("Lookup after the refusal: %v", err)
	}
	for _, sub := range []string{"layers/sha256", "images", "tmp"} {
		if got := imagetest.Entries(t, s, sub); len(got) != 0 {
			t.Errorf("%s after the refusal: %q, want empty", sub, got)
		}
	}
	if exists(filepath.Join(s.Dir(), "blobs/sha256", strings.TrimPrefix(digests[0], "sha256:"))) {
		t.Errorf("the corrupted blob is in the store")
	}
}

// TestPullConnectionBroken has the registry's connection break in the
// middle of each of three layers: the pull fails with one line that
// says so, naming the registry and a layer, no Go or tar text, and the
// next pull completes.
func TestPullConnectionBroken(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	built := imagetest.Build(t, imagetest.Image{Layers: []imagetest.Layer{
		{{Path: "a", Body: randomBody(t, 64<<10)}}, {{Path: "b", Body: randomBody(t, 64<<10)}}, {{Path: "c", Body: randomBody(t, 64<<10)}}}})
	ref := reg.PushImage(t, "drop:1", built)
	digests, _, blobs := layerDigests(t, built)
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		i := slices.IndexFunc(digests, func(d string) bool { return strings.HasSuffix(r.URL.Path, "/blobs/"+d) })
		if i < 0 || r.Method != http.MethodGet {
			registry.ServeHTTP(w, r)
			return
		}
		// Half the blob, then the connection closes.
		w.Header().Set("Content-Length", strconv.Itoa(len(blobs[i])))
		w.Write(blobs[i][:len(blobs[i])/2])
	})
	s := imagetest.Store(t)
	_, err := registry.Pull(context.Background(), s, ref, image.PullOptions{})
	msg := fmt.Sprint(err)
	if !errors.Is(err, image.ErrUnreachable) || strings.Count(msg, "\n") != 0 || strings.Count(msg, "sha256:") != 1 ||
		!strings.Contains(msg, "the connection to registry "+reg.Host+" broke while fetching layer sha256:") ||
		strings.Contains(msg, "EOF") || strings.Contains(msg, "blob") {
		t.Fatalf("pull through a broken connection: %q; want one line: the connection to registry %s broke while fetching layer DIGEST", msg, reg.Host)
	}
	reg.SetWrap(nil)
	imagetest.Pull(t, s, ref, image.PullOptions{})
}
