package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	// Lease, if set, is a holder (as Store.Lease's) that leases the image
	// as the pull returns it, so that no Remove or Prune takes it between
	// the pull and the lease.
	Lease string
}

// Progress is one step of a pull.
type Progress struct {
	Layers   int    `json:"layers"`   // how many layers the image has
	Layer    string `json:"layer"`    // the layer's digest
	Total    int64  `json:"total"`    // its compressed size
	Done     int64  `json:"done"`     // bytes of it downloaded and verified so far
	Complete bool   `json:"complete"` // downloaded, verified and unpacked (or already held)
	// Held says that the store held the layer already: nothing of it
	// was fetched.
	Held bool `json:"held,omitzero"`
}

// A Pulling is a pull from a registry under way into the store, which
// package image/registry makes with StartPull, fills (blobs and layers
// renamed into BlobPath and LayerPath from its WorkDir), ends with Commit
// and releases with Done. While it lasts, no other pull of its name runs
// and no Prune or collection removes blobs or layers.
type Pulling struct {
	// Name is the normalized name pulled.
	Name string

	s      *Store
	lease  string
	unlock []func()
}

// Held returns the image that the store holds for ref when o's policy
// lets the store serve it (not Always), leased to o.Lease, or nil and no
// error when the registry is to be asked. Under policy Never, an image
// the store lacks is an error wrapping ErrNotFound.
func (s *Store) Held(ref string, o PullOptions) (*Image, error) {
	n, err := Normalize(ref)
	if err != nil {
		return nil, err
	}
	policy, err := ParsePullPolicy(string(o.Policy))
	if err != nil || policy == PullAlways {
		return nil, err
	}
	img, err := s.lookupLeased(n, o.Lease)
	switch {
	case !errors.Is(err, ErrNotFound):
		return img, err
	case policy == PullNever:
		return nil, fmt.Errorf("%s is not in the store and the pull policy is Never: %w", n, ErrNotFound)
	}
	return nil, nil
}

// StartPull begins the pull of ref under o's policy: it returns the image
// the store holds when the policy lets the store serve it ([Store.Held]),
// or else a Pulling, once a pull of the same name that another process
// runs has ended (returning the image it pulled, if the policy lets it).
// Pulls of the same image at once, from any process, fetch it once.
func (s *Store) StartPull(ctx context.Context, ref string, o PullOptions) (*Image, *Pulling, error) {
	if img, err := s.Held(ref, o); img != nil || err != nil {
		return img, nil, err
	}
	n, err := Normalize(ref)
	if err != nil {
		return nil, nil, err
	}
	p := &Pulling{Name: n, s: s, lease: o.Lease}
	// The shared lock keeps Prune from taking what the pull has made
	// before the image's record names it.
	unlockGC, err := s.lockGC(ctx, unix.LOCK_SH)
	if err != nil {
		return nil, nil, err
	}
	p.unlock = append(p.unlock, unlockGC)
	sum := sha256.Sum256([]byte(n))
	unlock, err := flock.Lock(ctx, s.path(locksDir, "pull-"+hex.EncodeToString(sum[:8])))
	if err != nil {
		p.Done()
		return nil, nil, err
	}
	p.unlock = append(p.unlock, unlock)
	// Another process may have pulled it while this one waited.
	if img, err := s.Held(ref, o); img != nil || err != nil {
		p.Done()
		return img, nil, err
	}
	return nil, p, nil
}

// Done releases the pull's locks and removes its work directory.
func (p *Pulling) Done() {
	for i := len(p.unlock) - 1; i >= 0; i-- {
		p.unlock[i]()
	}
	p.unlock = nil
}

// WorkDir makes the directory, under tmp/, of the pull's files under way,
// locked while the pull runs and removed by Done. It first removes those
// that pulls killed before their end left.
func (p *Pulling) WorkDir() (string, error) {
	s := p.s
	unlockMeta, err := s.lockMeta()
	if err != nil {
		return "", err
	}
	defer unlockMeta()
	locks, err := filepath.Glob(s.path(tmpDir, "pull-*.lock"))
	if err != nil {
		return "", err
	}
	for _, l := range locks {
		if unlock, err := flock.TryLock(l); err == nil {
			os.RemoveAll(strings.TrimSuffix(l, ".lock"))
			os.Remove(l)
			unlock()
		}
	}
	dir, err := os.MkdirTemp(s.path(tmpDir), "pull-")
	if err != nil {
		return "", err
	}
	unlock, err := flock.TryLock(dir + ".lock")
	if err != nil {
		os.Remove(dir)
		return "", err
	}
	p.unlock = append(p.unlock, func() {
		os.RemoveAll(dir)
		os.Remove(dir + ".lock")
		unlock()
	})
	return dir, nil
}

// Commit ends the pull of img, whose layers are in the store: it keeps
// blobs (the manifest and config, by digest), then img's record, its name
// and the lease of the pull's options, and returns the image as the store
// now has it.
func (p *Pulling) Commit(img *Image, blobs map[string][]byte) (*Image, error) {
	s := p.s
	for d, b := range blobs {
		if err := s.writeBlob(d, b); err != nil {
			return nil, err
		}
	}
	unlock, err := s.lockMeta()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := s.writeRecord(img); err != nil {
		return nil, err
	}
	if err := s.writeRef(p.Name, img.ID); err != nil {
		return nil, err
	}
	if p.lease != "" {
		if err := s.writeLease(p.lease, img.ID); err != nil {
			return nil, err
		}
	}
	return s.record(img.ID)
}

// writeBlob keeps b as blob digest, unless the store holds it.
func (s *Store) writeBlob(digest string, b []byte) error {
	p := s.BlobPath(digest)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	return atomicfile.Write(p, b, 0o600)
}
