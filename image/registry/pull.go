package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/unitrun/unitrun/image"
	"golang.org/x/sys/unix"
)

// jobs is how many layers a pull fetches at once.
const jobs = 4

// Pull gets image ref into store s under o's policy: from the store, or
// from its registry, verifying every blob against its digest and
// unpacking every layer it does not hold yet. Pulls of the same image at
// once, from any process, fetch it once.
func Pull(ctx context.Context, s *image.Store, ref string, o image.PullOptions) (*image.Image, error) {
	img, p, err := s.StartPull(ctx, ref, o)
	if p == nil {
		return img, err
	}
	defer p.Done()
	r, err := name.ParseReference(p.Name)
	if err != nil {
		return nil, &image.RefError{Ref: ref, Err: err}
	}
	keys, err := newKeychain(o)
	if err != nil {
		return nil, err
	}
	work, err := p.WorkDir()
	if err != nil {
		return nil, pullError(s, r, keys, err)
	}
	img, err = fetch(ctx, s, p, r, keys, work, o)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, pullError(s, r, keys, err)
	}
	return img, nil
}

// fetch pulls the image that r names from its registry.
// Its files under way are in work; o says how to report progress and
// whose lease to take.
func fetch(ctx context.Context, s *image.Store, p *image.Pulling, r name.Reference, keys *keychain, work string, o image.PullOptions) (*image.Image, error) {
	rimg, err := remoteImage(ctx, r, keys)
	if err != nil {
		return nil, err
	}
	manifest, err := rimg.RawManifest()
	if err != nil {
		return nil, err
	}
	digest, err := rimg.Digest()
	if err != nil {
		return nil, err
	}
	rawConfig, err := rimg.RawConfigFile() // verified against its digest
	if err != nil {
		return nil, err
	}
	cf, err := rimg.ConfigFile() // read by remoteImage already
	if err != nil {
		return nil, err
	}
	layers, err := rimg.Layers()
	if err != nil {
		return nil, err
	}
	if len(layers) != len(cf.RootFS.DiffIDs) {
		return nil, fmt.Errorf("%s: the manifest has %d layers but the config %d", r.Name(), len(layers), len(cf.RootFS.DiffIDs))
	}

	report := func(image.Progress) {}
	if progress := o.Progress; progress != nil {
		var mu sync.Mutex
		report = func(p image.Progress) {
			mu.Lock()
			defer mu.Unlock()
			p.Layers = len(layers)
			progress(p)
		}
	}
	sizes := make([]int64, len(layers))
	errs := make([]error, len(layers))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, l := range layers {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			sizes[i], errs[i] = ensureLayer(s, l, cf.RootFS.DiffIDs[i], work, report)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	cfgName, err := rimg.ConfigName()
	if err != nil {
		return nil, err
	}
	img := &image.Image{
		ID: digest.String(),
		Config: image.Config{
			Entrypoint: cf.Config.Entrypoint,
			Cmd:        cf.Config.Cmd,
			Env:        cf.Config.Env,
			WorkingDir: cf.Config.WorkingDir,
			User:       cf.Config.User,
		},
		Pulled: time.Now().UTC().Truncate(time.Second),
	}
	for i, d := range cf.RootFS.DiffIDs {
		img.Layers = append(img.Layers, d.String())
		img.Size += sizes[i]
	}
	return p.Commit(img, map[string][]byte{digest.String(): manifest, cfgName.String(): rawConfig})
}

// remoteImage returns the image that r names in its registry, reached
// with keys, for the host's platform when r names an index, having read
// its config, before any of its layers. An index without the host's
// platform, or an image whose config says it is for another
// ([checkPlatform]), is a *platformError.
func remoteImage(ctx context.Context, r name.Reference, keys *keychain) (v1.Image, error) {
	img, err := chooseImage(ctx, r, keys)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	if err := checkPlatform(cf); err != nil {
		return nil, err
	}
	return img, nil
}

// chooseImage returns the image that r names in its registry, reached
// with keys, for the host's platform when r names an index. An index
// without the host's platform is a *platformError.
func chooseImage(ctx context.Context, r name.Reference, keys *keychain) (v1.Image, error) {
	desc, err := remote.Get(r,
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(keys),
		remote.WithPlatform(hostPlatform),
		remote.WithUserAgent("unitrun"))
	if err != nil {
		return nil, err
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		pe := &platformError{host: hostPlatform.String()}
		for _, d := range m.Manifests {
			switch {
			case d.Platform == nil || d.Platform.OS == "unknown": // attestations
			case d.Platform.Satisfies(hostPlatform):
				return desc.Image()
			default:
				pe.image = append(pe.image, d.Platform.String())
			}
		}
		return nil, pe
	}
	return desc.Image()
}

// hostPlatform is the platform of the images a pull takes.
var hostPlatform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

// checkPlatform returns a *platformError if config cf says its image is
// for another platform than the host's: a single image (no index chose
// it for the host) for another.
func checkPlatform(cf *v1.ConfigFile) error {
	if (cf.OS != "" && cf.OS != hostPlatform.OS) || (cf.Architecture != "" && cf.Architecture != hostPlatform.Architecture) {
		return &platformError{host: hostPlatform.String(), image: []string{cf.Platform().String()}}
	}
	return nil
}

// A platformError is an image for other platforms than the host's.
type platformError struct {
	host  string   // the host's, "linux/ARCH"
	image []string // the image's, "OS/ARCH[/VARIANT]"
}

func (e *platformError) Error() string {
	if len(e.image) == 0 {
		return "the image names no platform, and so none is this host's " + e.host
	}
	return "the image is for " + strings.Join(e.image, ", ") + ", not for this host's " + e.host
}

// ensureLayer makes sure the store holds layer l (of diff ID diffID),
// downloaded, verified and unpacked (in work first), and returns the bytes
// it takes unpacked. A layer whose blob the store holds is unpacked from
// it.
func ensureLayer(s *image.Store, l v1.Layer, diffID v1.Hash, work string, report func(image.Progress)) (int64, error) {
	digest, err := l.Digest()
	if err != nil {
		return 0, err
	}
	total, err := l.Size()
	if err != nil {
		return 0, err
	}
	dst := s.LayerPath(diffID.String())
	if _, err := os.Lstat(dst); err == nil {
		report(image.Progress{Layer: digest.String(), Total: total, Done: total, Complete: true, Held: true})
		return image.DiskUsage(dst)
	}

	var src io.ReadCloser
	var blobTmp *os.File
	if f, err := os.Open(s.BlobPath(digest.String())); err == nil {
		src = f
	} else {
		// go-containerregistry's reader checks the blob's size and digest
		// as it reaches its end and fails the read if they differ.
		rc, err := l.Compressed()
		if err != nil {
			return 0, err
		}
		src = &fetching{ReadCloser: rc}
		if blobTmp, err = os.CreateTemp(work, "blob-"); err != nil {
			src.Close()
			return 0, err
		}
		defer os.Remove(blobTmp.Name())
		defer blobTmp.Close()
	}
	defer src.Close()

	var in io.Reader = src
	if blobTmp != nil {
		in = io.TeeReader(src, blobTmp)
	}
	counted := &counter{r: in, step: func(n int64) {
		report(image.Progress{Layer: digest.String(), Total: total, Done: n})
	}}
	tmp, err := os.MkdirTemp(work, "layer-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	// The image's root, unless the layer has an entry for it, is as a
	// root directory is: MkdirTemp made it 0700, which only root could
	// enter.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return 0, err
	}
	got, err := unpack(counted, tmp)
	var fe *fetchError
	if errors.As(err, &fe) {
		return 0, &brokenError{layer: digest.String(), err: fe.err}
	}
	if err != nil {
		return 0, fmt.Errorf("layer %s: %w", digest, err)
	}
	if got != diffID {
		return 0, fmt.Errorf("layer %s: its content has digest %s, not the %s its image's config names", digest, got, diffID)
	}
	// The blob and the layer's files reach the disk (one syncfs for all)
	// before their names do, so a crash leaves nothing that looks whole
	// and is not.
	if err := syncfs(tmp); err != nil {
		return 0, err
	}
	if blobTmp != nil {
		if err := os.Rename(blobTmp.Name(), s.BlobPath(digest.String())); err != nil {
			return 0, err
		}
	}
	size, err := image.DiskUsage(tmp)
	if err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, dst); err != nil && !isExist(err) {
		return 0, err
	}
	report(image.Progress{Layer: digest.String(), Total: total, Done: total, Complete: true})
	return size, nil
}

// isExist reports the error of renaming a directory onto one that is
// there: another pull unpacked the same layer first.
func isExist(err error) bool {
	return errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY)
}

// syncfs flushes the filesystem that holds dir to disk.
func syncfs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// A counter reports the bytes read through it, every MiB and at the end.
type counter struct {
	r    io.Reader
	n    int64
	last int64
	step func(n int64)
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n-c.last >= 1<<20 || (err == io.EOF && c.n != c.last) {
		c.last = c.n
		c.step(c.n)
	}
	return n, err
}

// fetching reads a blob from the registry, its read errors marked as the
// connection's (a *fetchError), apart from those of the content.
type fetching struct{ io.ReadCloser }

func (f *fetching) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = &fetchError{err}
	}
	return n, err
}

// A fetchError is the failure of reading a blob from the registry.
type fetchError struct{ err error }

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

// A brokenError is a layer whose download the registry's connection
// broke.
type brokenError struct {
	layer string
	err   error
}

func (e *brokenError) Error() string { return "layer " + e.layer + ": " + e.err.Error() }
func (e *brokenError) Unwrap() error { return e.err }
