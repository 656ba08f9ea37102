package registry_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/image/registry"
	"golang.org/x/sys/unix"
)

// readIn returns the content of p in the top-most of dirs that has it.
func readIn(t *testing.T, dirs []string, p string) string {
	t.Helper()
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, p))
		if err == nil {
			return string(b)
		}
	}
	t.Fatalf("%s is in none of %v", p, dirs)
	return ""
}

func TestPullByTagAndDigest(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	cfg := image.Config{
		Entrypoint: []string{"/bin/tool"},
		Cmd:        []string{"echo", "hi"},
		Env:        []string{"PATH=/bin", "A=b"},
		WorkingDir: "/srv",
		User:       "1000:1000",
	}
	ref := reg.Push(t, "ns/app:v1", imagetest.Image{
		Layers: []imagetest.Layer{
			{{Path: "etc", Mode: fs.ModeDir | 0o755}, {Path: "etc/motd", Body: "one\n"}, {Path: "etc/gone", Body: "x"}},
			{{Path: "etc/motd", Body: "two\n"}, {Path: "srv/data", Body: "d", Mode: 0o600, UID: 1000, GID: 1000}},
		},
		Config: cfg,
	})
	s := imagetest.Store(t)
	img := imagetest.Pull(t, s, ref, image.PullOptions{})

	byDigest := reg.Digest(t, ref)
	if want := byDigest[strings.Index(byDigest, "@")+1:]; img.ID != want {
		t.Errorf("ID = %s, want the manifest digest %s", img.ID, want)
	}
	if !slices.Equal(img.Names, []string{ref}) {
		t.Errorf("Names = %q, want [%s]", img.Names, ref)
	}
	if !slices.Equal(img.Config.Entrypoint, cfg.Entrypoint) || !slices.Equal(img.Config.Cmd, cfg.Cmd) ||
		!slices.Equal(img.Config.Env, cfg.Env) || img.Config.WorkingDir != cfg.WorkingDir || img.Config.User != cfg.User {
		t.Errorf("Config = %+v, want %+v", img.Config, cfg)
	}
	if len(img.Layers) != 2 || img.Size < int64(len("one\n")+len("x")+len("two\n")+len("d")) {
		t.Errorf("Layers = %q, Size = %d; want 2 layers of 10 bytes or more", img.Layers, img.Size)
	}
	dirs := s.LayerDirs(img)
	if len(dirs) != 2 || !strings.HasSuffix(dirs[0], strings.TrimPrefix(img.Layers[1], "sha256:")) {
		t.Fatalf("LayerDirs = %q, want the top layer (%s) first", dirs, img.Layers[1])
	}
	if got := readIn(t, dirs, "etc/motd"); got != "two\n" {
		t.Errorf("etc/motd through the layers = %q, want the top layer's", got)
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("layer %s, whose tar has no entry for the root: %v, %v; want mode 0755, as a root is", d, fi.Mode(), err)
		}
	}
	fi, err := os.Stat(filepath.Join(dirs[0], "srv/data"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o600 || st.Uid != 1000 || st.Gid != 1000 {
		t.Errorf("srv/data: mode %v owner %d:%d, want 0600 1000:1000", fi.Mode(), st.Uid, st.Gid)
	}

	for _, name := range []string{ref, img.ID, img.ID[:7+12], strings.TrimPrefix(img.ID, "sha256:")[:12]} {
		got, err := s.Lookup(name)
		if err != nil || got.ID != img.ID {
			t.Errorf("Lookup(%s) = %v, %v; want %s", name, got, err, img.ID)
		}
	}

	again := imagetest.Pull(t, s, byDigest, image.PullOptions{})
	if again.ID != img.ID || !slices.Equal(again.Names, []string{ref, byDigest}) {
		t.Errorf("pull by digest: ID %s names %q, want %s named [%s %s]", again.ID, again.Names, img.ID, ref, byDigest)
	}

	if _, err := s.Lookup(reg.Host + "/ns/app:v2"); !errors.Is(err, image.ErrNotFound) {
		t.Errorf("Lookup of a tag never pulled: %v, want ErrNotFound", err)
	}
	_, err = registry.Pull(context.Background(), s, reg.Host+"/ns/app:v2", image.PullOptions{})
	if !errors.Is(err, image.ErrUnknown) || !strings.Contains(err.Error(), "v2") {
		t.Errorf("pull of a wrong tag: %v, want ErrUnknown naming the tag", err)
	}
	if _, err := registry.Pull(context.Background(), s, "Bad Name", image.PullOptions{}); err == nil || !strings.Contains(err.Error(), "not an image reference") {
		t.Errorf("pull of a bad name: %v", err)
	}
}

func TestPullPicksHostPlatformFromIndex(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	other := "s390x"
	if other == runtimeArch() {
		other = "ppc64le"
	}
	ref := reg.PushIndex(t, "multi:1",
		imagetest.Image{Arch: other, Layers: []imagetest.Layer{{{Path: "arch", Body: other}}}},
		imagetest.Image{Layers: []imagetest.Layer{{{Path: "arch", Body: "host"}}}},
	)
	s := imagetest.Store(t)
	img := imagetest.Pull(t, s, ref, image.PullOptions{})
	if got := readIn(t, s.LayerDirs(img), "arch"); got != "host" {
		t.Errorf("the index's image pulled holds %q, want the host platform's", got)
	}
	if byIndex := reg.Digest(t, ref); strings.HasSuffix(byIndex, img.ID) {
		t.Errorf("ID %s is the index's digest, want its image manifest's", img.ID)
	}
}

func TestPullUnpacksWhiteoutsAndOpaqueDirs(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "wh:1", imagetest.Image{Layers: []imagetest.Layer{
		{{Path: "a/x", Body: "x"}, {Path: "a/keep", Body: "k"}, {Path: "d/old", Body: "o"}},
		{imagetest.Whiteout("a/x"), {Path: "d", Mode: fs.ModeDir | 0o755}, imagetest.Opaque("d"), {Path: "d/new", Body: "n"},
			{Path: "ln", Mode: fs.ModeSymlink, Target: "a/keep"}, {Path: "bin/su", Mode: fs.ModeSetuid | 0o755, Body: "#!"}},
	}})
	s := imagetest.Store(t)
	img := imagetest.Pull(t, s, ref, image.PullOptions{})
	top := s.LayerDirs(img)[0]

	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(top, "a/x"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("whiteout a/x: mode %o rdev %d, want a 0/0 character device", st.Mode, st.Rdev)
	}
	if _, err := os.Lstat(filepath.Join(top, "a/.wh.x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the .wh. entry itself is in the layer: %v", err)
	}
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(filepath.Join(top, "d"), "trusted.overlay.opaque", buf)
	if err != nil || string(buf[:n]) != "y" {
		t.Errorf("d's trusted.overlay.opaque = %q, %v; want y", buf[:n], err)
	}
	if target, err := os.Readlink(filepath.Join(top, "ln")); err != nil || target != "a/keep" {
		t.Errorf("symlink ln -> %q, %v", target, err)
	}
	if fi, err := os.Stat(filepath.Join(top, "bin/su")); err != nil || fi.Mode()&fs.ModeSetuid == 0 {
		t.Errorf("bin/su lost its set-user-ID bit: %v %v", fi.Mode(), err)
	}

	// overlayfs itself reads the layers as the image means them.
	merged := t.TempDir()
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_RDONLY, "lowerdir="+strings.Join(s.LayerDirs(img), ":")); err != nil {
		t.Skipf("cannot mount overlayfs here (%v): the layers' form is checked above", err)
	}
	defer unix.Unmount(merged, unix.MNT_DETACH)
	for p, want := range map[string]bool{"a/x": false, "a/keep": true, "d/old": false, "d/new": true} {
		if _, err := os.Lstat(filepath.Join(merged, p)); (err == nil) != want {
			t.Errorf("in the overlay, %s exists = %v, want %v", p, err == nil, want)
		}
	}
}

func TestPullRefusesLayerPathThroughSymlink(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	outside := t.TempDir()
	ref := reg.Push(t, "evil:1", imagetest.Image{Layers: []imagetest.Layer{
		{{Path: "esc", Mode: fs.ModeSymlink, Target: outside}, {Path: "esc/pwned", Body: "x"}},
	}})
	s := imagetest.Store(t)
	_, err := registry.Pull(context.Background(), s, ref, image.PullOptions{})
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("pull of a layer writing through a symlink: %v, want refused", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Errorf("the layer wrote outside the store")
	}
	if _, err := s.Lookup(ref); !errors.Is(err, image.ErrNotFound) {
		t.Errorf("the refused image is in the store: %v", err)
	}
}

func TestPullPolicies(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "pol:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "f", Body: "1"}}}})
	var requests atomic.Int32
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		requests.Add(1)
		registry.ServeHTTP(w, r)
	})
	s := imagetest.Store(t)
	if _, err := registry.Pull(context.Background(), s, ref, image.PullOptions{Policy: image.PullNever}); !errors.Is(err, image.ErrNotFound) {
		t.Errorf("Never, image absent: %v, want ErrNotFound", err)
	}
	if requests.Load() != 0 {
		t.Errorf("Never reached the registry")
	}
	first := imagetest.Pull(t, s, ref, image.PullOptions{})
	requests.Store(0)
	for _, p := range []image.PullPolicy{"", image.PullIfNotPresent, image.PullNever} {
		if img := imagetest.Pull(t, s, ref, image.PullOptions{Policy: p}); img.ID != first.ID {
			t.Errorf("%q: %s, want %s", p, img.ID, first.ID)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("IfNotPresent and Never of a held image made %d requests, want none", n)
	}
	// Always asks the registry, but fetches no layer it holds.
	var blobs atomic.Int32
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		if strings.Contains(r.URL.Path, "/blobs/") {
			blobs.Add(1)
		}
		requests.Add(1)
		registry.ServeHTTP(w, r)
	})
	imagetest.Pull(t, s, ref, image.PullOptions{Policy: image.PullAlways})
	if requests.Load() == 0 || blobs.Load() > 1 {
		t.Errorf("Always: %d requests, %d of blobs; want the manifest asked for and at most the config fetched", requests.Load(), blobs.Load())
	}
	if _, err := registry.Pull(context.Background(), s, ref, image.PullOptions{Policy: "Sometimes"}); err == nil || !strings.Contains(err.Error(), "Always, IfNotPresent or Never") {
		t.Errorf("a bad policy: %v", err)
	}
}

func runtimeArch() string { return runtime.GOARCH }

func TestPulledToolRuns(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "tool:1", imagetest.Image{Layers: []imagetest.Layer{imagetest.ToolLayer(t, "/bin/tool")}})
	s := imagetest.Store(t)
	img := imagetest.Pull(t, s, ref, image.PullOptions{})
	out, err := exec.Command(filepath.Join(s.LayerDirs(img)[0], "bin/tool"), "echo", "hello", "image").CombinedOutput()
	if err != nil || string(out) != "hello image\n" {
		t.Errorf("the image's tool: %q, %v", out, err)
	}
}

func TestLeaseNamesAnImageInTheStore(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	s := imagetest.Store(t)
	img := imagetest.Pull(t, s, reg.Push(t, "l:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "f"}}}}), image.PullOptions{})
	if err := s.Lease("pod/a", "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, image.ErrNotFound) {
		t.Errorf("lease of an image not in the store: %v, want ErrNotFound", err)
	}
	if err := s.Lease("", img.ID); err == nil {
		t.Errorf("lease without a holder accepted")
	}
	if err := s.Lease("pod/a", img.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Release("pod/a"); err != nil {
		t.Fatal(err)
	}
}

func TestPullZstdAndUncompressedLayers(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	zt := imagetest.LayerTar(t, imagetest.Layer{{Path: "z", Body: "zstd"}})
	zl, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(zt)), nil },
		tarball.WithCompression(compression.ZStd), tarball.WithMediaType(types.OCILayerZStd))
	if err != nil {
		t.Fatal(err)
	}
	plain := static.NewLayer(imagetest.LayerTar(t, imagetest.Layer{{Path: "p", Body: "plain"}}), types.OCIUncompressedLayer)
	img, err := mutate.AppendLayers(empty.Image, zl, plain)
	if err != nil {
		t.Fatal(err)
	}
	s := imagetest.Store(t)
	got := imagetest.Pull(t, s, reg.PushImage(t, "formats:1", img), image.PullOptions{})
	dirs := s.LayerDirs(got)
	if z, p := readIn(t, dirs, "z"), readIn(t, dirs, "p"); z != "zstd" || p != "plain" {
		t.Errorf("a zstd layer gave %q, an uncompressed one %q", z, p)
	}
}

func TestPullKeepsXattrsButNotOverlays(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "xattr:1", imagetest.Image{Layers: []imagetest.Layer{{
		{Path: "f", Body: "x", Xattrs: map[string]string{
			"trusted.unitrun-test":     "kept",
			"trusted.overlay.redirect": "/elsewhere",
			"security.selinux":         "system_u:object_r:etc_t:s0",
		}},
	}}})
	s := imagetest.Store(t)
	f := filepath.Join(s.LayerDirs(imagetest.Pull(t, s, ref, image.PullOptions{}))[0], "f")
	buf := make([]byte, 64)
	if n, err := unix.Lgetxattr(f, "trusted.unitrun-test", buf); err != nil || string(buf[:n]) != "kept" {
		t.Errorf("the layer's xattr trusted.unitrun-test: %q, %v", buf[:n], err)
	}
	if _, err := unix.Lgetxattr(f, "trusted.overlay.redirect", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("a layer's trusted.overlay.redirect was written (%v): a layer must not steer overlayfs", err)
	}
}

// TestPullRefusesOtherPlatforms pulls an image whose config is for
// another architecture, and an index without the host's: each is
// refused naming the image's platforms and the host's, and nothing is
// kept.
func TestPullRefusesOtherPlatforms(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	other, another := "s390x", "ppc64le"
	if other == runtimeArch() || another == runtimeArch() {
		other, another = "riscv64", "mips64le"
	}
	single := reg.Push(t, "single:1", imagetest.Image{Arch: other, Layers: []imagetest.Layer{{{Path: "f"}}}})
	index := reg.PushIndex(t, "multi:1",
		imagetest.Image{Arch: other, Layers: []imagetest.Layer{{{Path: "f"}}}},
		imagetest.Image{Arch: another, Layers: []imagetest.Layer{{{Path: "g"}}}})
	s := imagetest.Store(t)
	host := "linux/" + runtimeArch()
	for ref, want := range map[string]string{
		single: "pulling " + single + ": the image is for linux/" + other + ", not for this host's " + host,
		index:  "pulling " + index + ": the image is for linux/" + other + ", linux/" + another + ", not for this host's " + host,
	} {
		_, err := registry.Pull(context.Background(), s, ref, image.PullOptions{})
		if err == nil || err.Error() != want {
			t.Errorf("pull of %s: %v; want %q", ref, err, want)
		}
		if _, err := s.Lookup(ref); !errors.Is(err, image.ErrNotFound) {
			t.Errorf("Lookup(%s) after the refusal: %v", ref, err)
		}
	}
}
