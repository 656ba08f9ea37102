package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/unitrun/unitrun/internal/flock"
	"golang.org/x/sys/unix"
)

// lockMeta takes the store's lock on image records, names and leases,
// held for short steps only.
func (s *Store) lockMeta() (unlock func(), err error) {
	return flock.Lock(context.Background(), s.path(locksDir, "meta"))
}

// lockGC takes the lock that pulls hold shared (how is unix.LOCK_SH) while
// they make blobs and layers that no record names yet, as Hold does, and
// that removing them takes exclusive (unix.LOCK_EX), waiting until ctx
// ends. Each call opens the lock file anew, so that shared holders in one
// process, or in a process and the unitrun-pull it runs, do not wait for
// one another.
func (s *Store) lockGC(ctx context.Context, how int) (unlock func(), err error) {
	f, err := os.OpenFile(s.path(locksDir, "gc"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Hold keeps Prune, and Remove's collection of the blobs and layers no
// image uses, from removing anything until release is called; pulls, and
// other holds, go on. It waits while a Prune runs, until ctx ends. A pod's
// creation holds the store from before it pulls its images until it has
// leased them, so that no prune takes an image in between.
func (s *Store) Hold(ctx context.Context) (release func(), err error) {
	return s.lockGC(ctx, unix.LOCK_SH)
}

// Lease records that holder (a pod: "pod/NAME") uses image id, so that
// Remove and Prune keep it. A holder has one lease per image it uses.
// PullOptions.Lease takes the lease as the pull returns the image.
func (s *Store) Lease(holder, id string) error {
	return s.leasing(holder, func() error {
		if _, err := s.record(id); err != nil {
			return err
		}
		return s.writeLease(holder, id)
	})
}

var errNoHolder = errors.New("an image lease needs a holder")

// writeLease records holder's lease of image id. The caller holds
// lockMeta and knows the image is there.
func (s *Store) writeLease(holder, id string) error {
	dir := s.path(leasesDir, url.PathEscape(holder))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, hexOf(id)), nil, 0o600)
}

// Release drops every lease of holder.
func (s *Store) Release(holder string) error {
	return s.leasing(holder, func() error {
		return os.RemoveAll(s.path(leasesDir, url.PathEscape(holder)))
	})
}

// leasing runs f, which changes holder's leases, under lockMeta.
func (s *Store) leasing(holder string, f func() error) error {
	if holder == "" {
		return errNoHolder
	}
	unlock, err := s.lockMeta()
	if err != nil {
		return err
	}
	defer unlock()
	return f()
}

// lookupLeased is Lookup of name n that, for a holder, also takes its
// lease, at once, so that no removal comes in between.
func (s *Store) lookupLeased(n, holder string) (*Image, error) {
	if holder == "" {
		return s.Lookup(n)
	}
	unlock, err := s.lockMeta()
	if err != nil {
		return nil, err
	}
	defer unlock()
	img, err := s.Lookup(n)
	if err != nil {
		return nil, err
	}
	return img, s.writeLease(holder, img.ID)
}

// holders returns, for each image ID leased, its holders.
func (s *Store) holders() (map[string][]string, error) {
	entries, err := os.ReadDir(s.path(leasesDir))
	if err != nil {
		return nil, err
	}
	held := map[string][]string{}
	for _, e := range entries {
		holder, err := url.PathUnescape(e.Name())
		if err != nil {
			continue
		}
		ids, err := os.ReadDir(s.path(leasesDir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("image leases: %w", err)
		}
		for _, id := range ids {
			held["sha256:"+id.Name()] = append(held["sha256:"+id.Name()], holder)
		}
	}
	return held, nil
}
