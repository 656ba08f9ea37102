package registry_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/unitrun/unitrun/image"
)

// TestNormalizeAsGoContainerregistry holds image.Normalize, which the
// store's names come from, to what go-containerregistry's name package,
// which Pull reaches the registry with, makes of the same references:
// the same name for each valid one, an error for each invalid one.
func TestNormalizeAsGoContainerregistry(t *testing.T) {
	sha256 := "sha256:" + strings.Repeat("ab", 32)
	sha512 := "sha512:" + strings.Repeat("0f", 64)
	refs := []string{
		// valid
		"busybox", "busybox:1.36", "library/busybox", "docker.io/busybox", "docker.io/library/busybox:latest",
		"index.docker.io/busybox", "index.docker.io/library/busybox:musl", "docker.io/someone/app",
		"someone/app", "someone/app:v1.2.3-rc_1", "a/b/c/d", "quay.io/ns/app:1.2", "quay.io/app",
		"registry.example/ns/app", "registry.example:5000/ns/app:tag", "localhost/app", "localhost:5000/app",
		"127.0.0.1:5000/ns/app:v2", "[::1]:5000/app", "Registry.Example/app", "host:5000/app@" + sha256,
		"busybox@" + sha256, "busybox:1.36@" + sha256, "quay.io/ns/app:v1@" + sha256, "app@" + sha512,
		"docker.io/library/busybox@" + sha256, "app:" + strings.Repeat("t", 128), "a.b_c-d/e__f", "a//b", "-a",
		"app:TAG", "app:_x", "app:.x", strings.Repeat("a", 255), "example.com/" + strings.Repeat("a", 255),
		"example/app:5000", "sha256", "app:latest", "localhost",
		// invalid
		"", "Busybox", "busybox:", "busybox:a/b", "busybox:" + strings.Repeat("t", 129), strings.Repeat("a", 256),
		"Bad Name", "app@sha256:abc", "app@" + strings.ToUpper(sha256), "app@md5:" + strings.Repeat("a", 32),
		"app@@" + sha256, "app@" + sha256 + "@" + sha256, "@" + sha256, "http://quay.io/app", "https://quay.io/app",
		"quay.io/", "quay.io/App", "user@quay.io/app", "quay.io:port/app", "app:t@g", "app:tag:more", ":tag",
		"quay.io/app:", "app\n", "app é", "ns/ap\x00p", "quay.io/app@" + sha256 + ":x", "app:tag@sha256:",
	}
	for _, ref := range refs {
		got, err := image.Normalize(ref)
		r, gerr := name.ParseReference(ref)
		switch {
		case gerr != nil && err == nil:
			t.Errorf("Normalize(%q) = %q, go-containerregistry: %v", ref, got, gerr)
		case gerr == nil && err != nil:
			t.Errorf("Normalize(%q): %v, go-containerregistry: %q", ref, err, r.Name())
		case gerr == nil && got != r.Name():
			t.Errorf("Normalize(%q) = %q, go-containerregistry: %q", ref, got, r.Name())
		case err != nil:
			var re *image.RefError
			if !errors.As(err, &re) || re.Ref != ref {
				t.Errorf("Normalize(%q): %v is not a *image.RefError of the reference", ref, err)
			}
		}
	}
}
