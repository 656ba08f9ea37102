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
// they make blobs and layers that no record names yet, and that removing
// them takes exclusive (unix.LOCK_EX), waiting until ctx ends.
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

// Lease records that holder (a pod: "pod/NAME") uses image id, so that
// Remove and Prune keep it. A holder has one lease per image it uses.
func (s *Store) Lease(holder, id string) error {
	return s.withLeases(holder, func(dir string) error {
		if _, err := s.record(id); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, hexOf(id)), nil, 0o600)
	})
}

// Release drops every lease of holder.
func (s *Store) Release(holder string) error {
	return s.withLeases(holder, os.RemoveAll)
}

// withLeases calls f with the directory of holder's leases, under the
// lock that orders leases and removals.
func (s *Store) withLeases(holder string, f func(dir string) error) error {
	if holder == "" {
		return errors.New("an image lease needs a holder")
	}
	unlock, err := s.lockMeta()
	if err != nil {
		return err
	}
	defer unlock()
	return f(s.path(leasesDir, url.PathEscape(holder)))
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
