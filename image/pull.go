package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/internal/flock"
	"golang.org/x/sys/unix"
)

// PullPolicy says when a pull reaches the registry, as Kubernetes'
// imagePullPolicy.
type PullPolicy string

// Pull policies.
const (
	PullAlways       PullPolicy = "Always"
	PullIfNotPresent PullPolicy = "IfNotPresent"
	PullNever        PullPolicy = "Never"
)

// ParsePullPolicy returns the policy that s names, "" being IfNotPresent.
func ParsePullPolicy(s string) (PullPolicy, error) {
	switch p := PullPolicy(s); p {
	case "":
		return PullIfNotPresent, nil
	case PullAlways, PullIfNotPresent, PullNever:
		return p, nil
	}
	return "", fmt.Errorf("pull policy %q: must be Always, IfNotPresent or Never", s)
}

// Credentials are a registry's user name and password (or token).
type Credentials struct {
	Username, Password string
}

// PullOptions say how to reach the registry.
type PullOptions struct {
	// Policy is when to reach the registry; "" is IfNotPresent.
	Policy PullPolicy
	// AuthFile is a docker-style config.json or auth.json; "" reads the
	// usual places ($REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json,
	// ~/.docker/config.json).
	AuthFile string
	// Auth, when it holds the registry's host, wins over AuthFile: the
	// node fills it from a Pod's imagePullSecrets.
	Auth map[string]Credentials
	// Progress, if not nil, is called as layers download, from one
	// goroutine at a time.
	Progress func(Progress)
}

// Progress is one step of a pull.
type Progress struct {
	Layers   int    // how many layers the image has
	Layer    string // the layer's digest
	Total    int64  // its compressed size
	Done     int64  // bytes of it downloaded and verified so far
	Complete bool   // downloaded, verified and unpacked (or already held)
}

// jobs is how many layers a pull fetches at once.
const jobs = 4

// Pull gets image ref under o's policy: from the store, or from its
// registry, verifying every blob against its digest and unpacking every
// layer it does not hold yet. Pulls of the same image at once, from any
// process, fetch it once.
func (s *Store) Pull(ctx context.Context, ref string, o PullOptions) (*Image, error) {
	r, err := normalize(ref)
	if err != nil {
		return nil, err
	}
	policy, err := ParsePullPolicy(string(o.Policy))
	if err != nil {
		return nil, err
	}
	if policy != PullAlways {
		img, err := s.Lookup(r.Name())
		if !errors.Is(err, ErrNotFound) {
			return img, err
		}
		if policy == PullNever {
			return nil, fmt.Errorf("%s is not in the store and the pull policy is Never: %w", r.Name(), ErrNotFound)
		}
	}
	// The shared lock keeps Prune from taking what the pull has made
	// before the image's record names it.
	unlockGC, err := s.lockGC(ctx, unix.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlockGC()
	sum := sha256.Sum256([]byte(r.Name()))
	unlock, err := flock.Lock(ctx, s.path(locksDir, "pull-"+hex.EncodeToString(sum[:8])))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if policy != PullAlways {
		// Another process may have pulled it while this one waited.
		if img, err := s.Lookup(r.Name()); !errors.Is(err, ErrNotFound) {
			return img, err
		}
	}
	keys, err := newKeychain(o)
	if err != nil {
		return nil, err
	}
	work, done, err := s.workDir()
	if err != nil {
		return nil, s.pullError(r, keys, err)
	}
	defer done()
	img, err := s.fetch(ctx, r, keys, work, o.Progress)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, s.pullError(r, keys, err)
	}
	return img, nil
}

// fetch pulls the image that r names from its registry.
// Its files under way are in work.
func (s *Store) fetch(ctx context.Context, r name.Reference, keys *keychain, work string, progress func(Progress)) (*Image, error) {
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
	cf, err := rimg.ConfigFile()
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

	report := func(Progress) {}
	if progress != nil {
		var mu sync.Mutex
		report = func(p Progress) {
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
			sizes[i], errs[i] = s.ensureLayer(l, cf.RootFS.DiffIDs[i], work, report)
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
	for d, b := range map[v1.Hash][]byte{digest: manifest, cfgName: rawConfig} {
		if err := s.writeBlob(d.String(), b); err != nil {
			return nil, err
		}
	}
	img := &Image{
		ID: digest.String(),
		Config: Config{
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
	unlock, err := s.lockMeta()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := s.writeRecord(img); err != nil {
		return nil, err
	}
	if err := s.writeRef(r.Name(), img.ID); err != nil {
		return nil, err
	}
	return s.record(img.ID)
}

// workDir makes the directory, under tmp/, of one pull's files under way,
// locked while the pull runs, and returns the function that removes it.
// It first removes those that pulls killed before their end left.
func (s *Store) workDir() (dir string, done func(), err error) {
	unlockMeta, err := s.lockMeta()
	if err != nil {
		return "", nil, err
	}
	defer unlockMeta()
	locks, err := filepath.Glob(s.path(tmpDir, "pull-*.lock"))
	if err != nil {
		return "", nil, err
	}
	for _, l := range locks {
		if unlock, err := flock.TryLock(l); err == nil {
			os.RemoveAll(strings.TrimSuffix(l, ".lock"))
			os.Remove(l)
			unlock()
		}
	}
	if dir, err = os.MkdirTemp(s.path(tmpDir), "pull-"); err != nil {
		return "", nil, err
	}
	unlock, err := flock.TryLock(dir + ".lock")
	if err != nil {
		os.Remove(dir)
		return "", nil, err
	}
	return dir, func() {
		os.RemoveAll(dir)
		os.Remove(dir + ".lock")
		unlock()
	}, nil
}

// remoteImage returns the image that r names in its registry, reached
// with keys, for the host's linux platform when r names an index.
func remoteImage(ctx context.Context, r name.Reference, keys *keychain) (v1.Image, error) {
	desc, err := remote.Get(r,
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(keys),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
		remote.WithUserAgent("unitrun"))
	if err != nil {
		return nil, err
	}
	return desc.Image()
}

// writeBlob keeps b as blob digest, unless the store holds it.
func (s *Store) writeBlob(digest string, b []byte) error {
	p := s.blobPath(digest)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return atomicfile.Write(p, b, 0o600)
}

// ensureLayer makes sure the store holds layer l (of diff ID diffID),
// downloaded, verified and unpacked (in work first), and returns the bytes
// it takes unpacked. A layer whose blob the store holds is unpacked from
// it.
func (s *Store) ensureLayer(l v1.Layer, diffID v1.Hash, work string, report func(Progress)) (int64, error) {
	digest, err := l.Digest()
	if err != nil {
		return 0, err
	}
	total, err := l.Size()
	if err != nil {
		return 0, err
	}
	dst := s.layerPath(diffID.String())
	if _, err := os.Lstat(dst); err == nil {
		report(Progress{Layer: digest.String(), Total: total, Done: total, Complete: true})
		return diskUsage(dst)
	}

	var src io.ReadCloser
	var blobTmp *os.File
	if f, err := os.Open(s.blobPath(digest.String())); err == nil {
		src = f
	} else {
		// go-containerregistry's reader checks the blob's size and digest
		// as it reaches its end and fails the read if they differ.
		if src, err = l.Compressed(); err != nil {
			return 0, err
		}
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
		report(Progress{Layer: digest.String(), Total: total, Done: n})
	}}
	tmp, err := os.MkdirTemp(work, "layer-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	got, err := unpack(counted, tmp)
	if err != nil {
		return 0, fmt.Errorf("layer %s: %w", digest, err)
	}
	if got != diffID {
		return 0, fmt.Errorf("layer %s: its content has digest %s, not the %s its image's config names", digest, got, diffID)
	}
	if blobTmp != nil {
		if err := blobTmp.Sync(); err != nil {
			return 0, err
		}
		if err := os.Rename(blobTmp.Name(), s.blobPath(digest.String())); err != nil {
			return 0, err
		}
	}
	// The layer's files reach the disk before its name does, so a crash
	// leaves no layer that looks whole and is not.
	if err := syncfs(tmp); err != nil {
		return 0, err
	}
	size, err := diskUsage(tmp)
	if err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, dst); err != nil && !isExist(err) {
		return 0, err
	}
	report(Progress{Layer: digest.String(), Total: total, Done: total, Complete: true})
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
