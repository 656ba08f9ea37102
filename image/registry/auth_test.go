package registry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/image/registry"
	"golang.org/x/sys/unix"
)

func TestPullAuth(t *testing.T) {
	reg := imagetest.NewAuthRegistry(t, "alice", "s3cret")
	ref := reg.Push(t, "private/app:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "f", Body: "x"}}}})
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("REGISTRY_AUTH_FILE", "")
	t.Setenv("DOCKER_CONFIG", "")
	s := imagetest.Store(t)
	always := image.PullOptions{Policy: image.PullAlways}

	_, err := registry.Pull(context.Background(), s, ref, always)
	if !errors.Is(err, image.ErrUnauthorized) || !strings.Contains(err.Error(), reg.Host) ||
		!strings.Contains(err.Error(), filepath.Join(home, ".docker/config.json")) {
		t.Errorf("pull without credentials: %v; want refused, naming the registry and where credentials are read from", err)
	}
	bad := reg.AuthFile(t, "alice", "wrong")
	_, err = registry.Pull(context.Background(), s, ref, image.PullOptions{Policy: image.PullAlways, AuthFile: bad})
	if !errors.Is(err, image.ErrUnauthorized) || !strings.Contains(err.Error(), bad) {
		t.Errorf("pull with wrong credentials: %v; want refused, naming the file", err)
	}
	if _, err := s.Lookup(ref); !errors.Is(err, image.ErrNotFound) {
		t.Errorf("a refused pull left an image: %v", err)
	}
	_, err = registry.Pull(context.Background(), s, ref, image.PullOptions{AuthFile: filepath.Join(home, "missing.json")})
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("pull with a missing auth file: %v", err)
	}

	imagetest.Pull(t, s, ref, image.PullOptions{Policy: image.PullAlways, AuthFile: bad,
		Auth: map[string]image.Credentials{reg.Host: {Username: "alice", Password: "s3cret"}}})

	good := reg.AuthFile(t, "alice", "s3cret")
	t.Setenv("REGISTRY_AUTH_FILE", good)
	imagetest.Pull(t, s, ref, always)

	// A URL as the key, and username and password apart.
	t.Setenv("REGISTRY_AUTH_FILE", "")
	dockerConfig := t.TempDir()
	body := `{"auths":{"http://` + reg.Host + `/v2/":{"username":"alice","password":"s3cret"}}}`
	if err := os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	imagetest.Pull(t, s, ref, always)

	t.Setenv("DOCKER_CONFIG", "")
	if err := os.MkdirAll(filepath.Join(home, ".docker"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(good, filepath.Join(home, ".docker/config.json")); err != nil {
		t.Fatal(err)
	}
	imagetest.Pull(t, s, ref, always)
}

func TestPullOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v)", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "huge:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "big", Body: randomBody(t, 2<<20)}}}})
	s, err := image.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = registry.Pull(context.Background(), s, ref, image.PullOptions{})
	if !errors.Is(err, image.ErrFull) || !strings.Contains(err.Error(), s.Dir()) {
		t.Fatalf("pull onto a full disk: %v; want ErrFull naming the store", err)
	}
	for _, sub := range []string{"layers/sha256", "blobs/sha256", "images", "refs", "tmp"} {
		if got := imagetest.Entries(t, s, sub); len(got) != 0 {
			t.Errorf("%s after the failed pull: %q, want empty", sub, got)
		}
	}
}
