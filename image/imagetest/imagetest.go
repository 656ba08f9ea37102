// Package imagetest serves images to tests: a registry in the test's
// process (go-containerregistry's pkg/registry over plain HTTP on
// 127.0.0.1, basic auth if asked) and images built from a description,
// pushed to it, so that no test reaches a network.
//
// An image that must run something holds [Tool], a static binary built
// from the Go source in this package (the host has no static busybox to
// copy, and a Go binary needs no loader or libc in the image). It does
// what its first argument says:
//
//	tool echo ARG...        prints the ARGs, space-separated, and a newline
//	tool env                prints its environment, one VAR=VALUE a line
//	tool pwd                prints its working directory
//	tool id                 prints "UID:GID"
//	tool cat FILE...        copies the FILEs to stdout
//	tool ls DIR             prints the names in DIR, one a line
//	tool write FILE TEXT    writes TEXT to FILE
//	tool sleep SECONDS      sleeps
//	tool exit N             exits with status N
package imagetest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/unitrun/unitrun/image"
)

// A Registry is an image registry served by the test's process until the
// test ends.
type Registry struct {
	// Host is its "127.0.0.1:PORT", the first part of the names of the
	// images it serves.
	Host string
	// User and Password are the credentials it requires, if any.
	User, Password string
	// Wrap, if set, serves each request instead of the registry, which it
	// is given: tests use it to count or corrupt what the registry
	// answers.
	Wrap func(w http.ResponseWriter, r *http.Request, registry http.Handler)

	mu sync.Mutex
}

// NewRegistry starts a registry that anyone may read.
func NewRegistry(t testing.TB) *Registry {
	return newRegistry(t, "", "")
}

// NewAuthRegistry starts a registry that serves only requests with basic
// auth as user with password.
func NewAuthRegistry(t testing.TB, user, password string) *Registry {
	return newRegistry(t, user, password)
}

func newRegistry(t testing.TB, user, password string) *Registry {
	t.Helper()
	r := &Registry{User: user, Password: password}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.User != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.User || p != r.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="imagetest"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		r.mu.Lock()
		wrap := r.Wrap
		r.mu.Unlock()
		if wrap != nil {
			wrap(w, req, reg)
			return
		}
		reg.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// SetWrap sets Wrap while the registry serves.
func (r *Registry) SetWrap(wrap func(w http.ResponseWriter, req *http.Request, registry http.Handler)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Wrap = wrap
}

// AuthFile writes a docker-style config.json in a temp dir that gives
// user and password for the registry, and returns its path.
func (r *Registry) AuthFile(t testing.TB, user, password string) string {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	p := filepath.Join(t.TempDir(), "config.json")
	body := `{"auths":{"` + r.Host + `":{"auth":"` + auth + `"}}}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A File is one entry of a layer.
type File struct {
	// Path is where it is in the image, as "etc/hosts" or "/etc/hosts".
	Path string
	// Mode is its type and permissions: 0 is a regular file 0644;
	// fs.ModeDir, fs.ModeSymlink, fs.ModeCharDevice|fs.ModeDevice and
	// fs.ModeNamedPipe make the others; fs.ModeSetuid and such are kept.
	Mode fs.FileMode
	// Body is a regular file's content.
	Body string
	// Target is a symlink's target.
	Target string
	// Link, if set, makes the entry a hard link to the earlier entry
	// of the layer at this path.
	Link string
	// UID and GID own it.
	UID, GID int
}

// Whiteout is the entry that hides p and what is under it in the layers
// below.
func Whiteout(p string) File {
	dir, base := path.Split(p)
	return File{Path: dir + ".wh." + base}
}

// Opaque is the entry that hides, in the layers below, what is in the
// directory dir (which the layer has too).
func Opaque(dir string) File {
	return File{Path: path.Join(dir, ".wh..wh..opq")}
}

// A Layer is a list of entries, written to its tar in order.
type Layer []File

// An Image describes an image to build.
type Image struct {
	// Layers are its layers, bottom first.
	Layers []Layer
	// Config is what its config says about running it.
	Config image.Config
	// OS and Arch are its platform; "" is linux and the host's.
	OS, Arch string
}

// Build makes the image that d describes.
func Build(t testing.TB, d Image) v1.Image {
	t.Helper()
	img := empty.Image
	for _, l := range d.Layers {
		b := LayerTar(t, l)
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(b)), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = d.OS, d.Arch
	if cf.OS == "" {
		cf.OS = "linux"
	}
	if cf.Architecture == "" {
		cf.Architecture = runtime.GOARCH
	}
	cf.Config.Entrypoint = d.Config.Entrypoint
	cf.Config.Cmd = d.Config.Cmd
	cf.Config.Env = d.Config.Env
	cf.Config.WorkingDir = d.Config.WorkingDir
	cf.Config.User = d.Config.User
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// LayerTar returns the uncompressed tar of l.
func LayerTar(t testing.TB, l Layer) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range l {
		hdr := &tar.Header{
			Name:    strings.TrimPrefix(f.Path, "/"),
			Mode:    int64(f.Mode.Perm()),
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: time.Unix(1700000000, 0),
			Format:  tar.FormatPAX,
		}
		if f.Mode&fs.ModeSetuid != 0 {
			hdr.Mode |= 0o4000
		}
		if f.Mode&fs.ModeSetgid != 0 {
			hdr.Mode |= 0o2000
		}
		if f.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		switch {
		case f.Link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, f.Link
		case f.Mode&fs.ModeDir != 0:
			hdr.Typeflag = tar.TypeDir
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Target
		case f.Mode&fs.ModeNamedPipe != 0:
			hdr.Typeflag = tar.TypeFifo
		case f.Mode&fs.ModeCharDevice != 0:
			hdr.Typeflag = tar.TypeChar
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Body))
			if f.Mode.Perm() == 0 && f.Mode&^fs.ModePerm == 0 {
				hdr.Mode = 0o644
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, f.Body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Push builds d and pushes it as repoTag ("name:tag", "ns/name:tag") to
// the registry, and returns the reference to pull ("127.0.0.1:PORT/name:tag").
func (r *Registry) Push(t testing.TB, repoTag string, d Image) string {
	t.Helper()
	return r.PushImage(t, repoTag, Build(t, d))
}

// PushImage pushes img as repoTag and returns the reference to pull.
func (r *Registry) PushImage(t testing.TB, repoTag string, img v1.Image) string {
	t.Helper()
	ref := r.ref(t, repoTag)
	if err := remote.Write(ref, img, r.auth()); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// PushIndex pushes, as repoTag, an index of the images that ds describe
// (each with its OS and Arch), and returns the reference to pull.
func (r *Registry) PushIndex(t testing.TB, repoTag string, ds ...Image) string {
	t.Helper()
	var idx v1.ImageIndex = empty.Index
	idx = mutate.IndexMediaType(idx, types.OCIImageIndex)
	for _, d := range ds {
		img := Build(t, d)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture}},
		})
	}
	ref := r.ref(t, repoTag)
	if err := remote.WriteIndex(ref, idx, r.auth()); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// Digest returns the reference to pull ref (a name:tag that Push
// returned) by its digest ("127.0.0.1:PORT/name@sha256:…").
func (r *Registry) Digest(t testing.TB, ref string) string {
	t.Helper()
	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(tag, r.auth())
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(desc.Digest.String()).String()
}

func (r *Registry) ref(t testing.TB, repoTag string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(r.Host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func (r *Registry) auth() remote.Option {
	if r.User == "" {
		return remote.WithAuth(authn.Anonymous)
	}
	return remote.WithAuth(&authn.Basic{Username: r.User, Password: r.Password})
}

// Tool returns the path of the static test binary described in the
// package doc, built once (into the temp dir, named by its source's
// digest, and reused by later test processes).
func Tool(t testing.TB) string {
	t.Helper()
	toolOnce.Do(func() { toolPath, toolErr = buildTool() })
	if toolErr != nil {
		t.Fatalf("building the test tool: %v", toolErr)
	}
	return toolPath
}

var (
	toolOnce sync.Once
	toolPath string
	toolErr  error
)

func buildTool() (string, error) {
	sum := sha256.Sum256([]byte(toolSource))
	bin := filepath.Join(os.TempDir(), "unitrun-imagetest-tool-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "unitrun-imagetest-src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(toolSource), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module imagetesttool\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", "tool", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	// Renamed into place whole, for other test processes.
	return bin, os.Rename(filepath.Join(dir, "tool"), bin)
}

// ToolLayer returns a layer that holds Tool at p (as "/bin/tool"), mode
// 0755.
func ToolLayer(t testing.TB, p string) Layer {
	t.Helper()
	b, err := os.ReadFile(Tool(t))
	if err != nil {
		t.Fatal(err)
	}
	var l Layer
	dir := ""
	for _, c := range strings.Split(strings.Trim(path.Dir(p), "/"), "/") {
		if c == "" {
			continue
		}
		dir = path.Join(dir, c)
		l = append(l, File{Path: dir, Mode: fs.ModeDir | 0o755})
	}
	return append(l, File{Path: p, Mode: 0o755, Body: string(b)})
}
