package registry_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/image/registry"
)

func TestExtractFile(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "ex:1", imagetest.Image{Layers: []imagetest.Layer{
		{{Path: "usr/bin/tool", Body: "v1"}, {Path: "usr/bin/gone", Body: "g"}, {Path: "opt/o/file", Body: "o"},
			{Path: "etc/real", Body: "real"}, {Path: "usr/lib/x", Body: "lib"}},
		{{Path: "usr/bin/tool", Body: "v2", Mode: 0o750}, imagetest.Whiteout("usr/bin/gone"),
			{Path: "opt/o", Mode: fs.ModeDir | 0o755}, imagetest.Opaque("opt/o"),
			{Path: "bin", Mode: fs.ModeSymlink, Target: "usr/bin"}, {Path: "etc/link", Mode: fs.ModeSymlink, Target: "../../etc/real"},
			{Path: "usr/bin/hl", Link: "usr/bin/tool"}},
		{{Path: "top", Body: "t"}},
	}})
	var blobGets atomic.Int32
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		if strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			blobGets.Add(1)
		}
		registry.ServeHTTP(w, r)
	})
	s := imagetest.Store(t)
	extract := func(p string) (string, fs.FileMode, error) {
		var b bytes.Buffer
		mode, err := registry.ExtractFile(context.Background(), s, ref, p, image.PullOptions{}, &b)
		return b.String(), mode, err
	}

	// From the registry, with the store empty: the top layer settles
	// /top, and the layers below are not fetched (the config is, whose
	// platform is checked).
	if got, _, err := extract("/top"); err != nil || got != "t" || blobGets.Load() != 2 {
		t.Errorf("/top from the registry: %q, %v, %d blobs fetched; want t from the top layer's blob and the config alone", got, err, blobGets.Load())
	}
	if got, mode, err := extract("/usr/bin/tool"); err != nil || got != "v2" || mode != 0o750 {
		t.Errorf("/usr/bin/tool from the registry: %q %v %v; want the upper layer's v2, mode 0750", got, mode, err)
	}
	if imgs, _ := s.List(); len(imgs) != 0 {
		t.Errorf("ExtractFile from the registry added %d images to the store", len(imgs))
	}

	check := func(from string) {
		t.Helper()
		for p, want := range map[string]string{"/usr/bin/tool": "v2", "/bin/tool": "v2", "/etc/link": "real", "/usr/lib/x": "lib", "/top": "t", "/usr/bin/hl": "v2"} {
			if got, _, err := extract(p); err != nil || got != want {
				t.Errorf("%s from %s: %q, %v; want %q", p, from, got, err, want)
			}
		}
		for _, p := range []string{"/usr/bin/gone", "/opt/o/file", "/nope"} {
			if _, _, err := extract(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s from %s: %v; want not found (a whiteout, an opaque dir, none)", p, from, err)
			}
		}
		if _, _, err := extract("/opt/o"); !errors.Is(err, image.ErrNotFile) || !strings.Contains(err.Error(), "a directory") {
			t.Errorf("/opt/o from %s: %v", from, err)
		}
	}
	check("the registry")
	imagetest.Pull(t, s, ref, image.PullOptions{})
	blobGets.Store(0)
	check("the store")
	if n := blobGets.Load(); n != 0 {
		t.Errorf("ExtractFile of an image in the store fetched %d blobs", n)
	}
	if _, _, err := extract("usr/bin/tool"); err == nil || !strings.Contains(err.Error(), "absolute path") {
		t.Errorf("a relative path: %v", err)
	}
}

// ExtractFile refuses a single image (no index) for another platform as
// Pull does, in Pull's words, before any layer is fetched.
func TestExtractFileRefusesOtherPlatform(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	other := "s390x"
	if other == runtimeArch() {
		other = "riscv64"
	}
	img := imagetest.Build(t, imagetest.Image{Arch: other, Layers: []imagetest.Layer{{{Path: "usr/bin/tool", Body: "t"}}}})
	ref := reg.PushImage(t, "single:1", img)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	layer, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	var layerGets atomic.Int32
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+layer.String()) {
			layerGets.Add(1)
		}
		registry.ServeHTTP(w, r)
	})
	s := imagetest.Store(t)
	_, pullErr := registry.Pull(context.Background(), s, ref, image.PullOptions{})
	want := "pulling " + ref + ": the image is for linux/" + other + ", not for this host's linux/" + runtimeArch()
	if pullErr == nil || pullErr.Error() != want {
		t.Fatalf("Pull: %v; want %q", pullErr, want)
	}
	layerGets.Store(0)
	var b bytes.Buffer
	_, err = registry.ExtractFile(context.Background(), s, ref, "/usr/bin/tool", image.PullOptions{}, &b)
	if err == nil || err.Error() != want || !errors.As(err, new(*image.PullError)) {
		t.Errorf("ExtractFile: %v; want Pull's %q", err, want)
	}
	if n := layerGets.Load(); n != 0 || b.Len() != 0 {
		t.Errorf("ExtractFile of an image for linux/%s fetched %d layers and wrote %q", other, n, b.String())
	}
}
