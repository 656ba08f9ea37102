package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// List returns every image in the store, the last pulled first.
func (s *Store) List() ([]*Image, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	refs, err := s.refs()
	if err != nil {
		return nil, err
	}
	var imgs []*Image
	for _, id := range ids {
		img, err := s.recordNamed(id, refs)
		if errors.Is(err, ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	slices.SortFunc(imgs, func(a, b *Image) int {
		if c := b.Pulled.Compare(a.Pulled); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return imgs, nil
}

// An InUseError is a removal refused because pods hold the image.
type InUseError struct {
	ID      string
	Holders []string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("image %s is in use by %s", e.ID, strings.Join(e.Holders, ", "))
}

// Remove removes what ref names from the store: a name that other names'
// image also has, only that name; else the image and all its names,
// unless a lease holds it (an *InUseError). It then removes the blobs and
// layers that no image uses any more, unless a pull or a Hold is under
// way (then Prune does). It returns the image it removed, or nil for a name alone.
func (s *Store) Remove(ref string) (*Image, error) {
	unlock, err := s.lockMeta()
	if err != nil {
		return nil, err
	}
	img, err := s.Lookup(ref)
	if err != nil {
		unlock()
		return nil, err
	}
	nameOnly := ""
	if n, err := Normalize(ref); err == nil && slices.Contains(img.Names, n) && len(img.Names) > 1 {
		nameOnly = n
	}
	if nameOnly != "" {
		err = s.removeRef(nameOnly)
		unlock()
		return nil, err
	}
	held, err := s.holders()
	if err == nil && len(held[img.ID]) > 0 {
		err = &InUseError{ID: img.ID, Holders: held[img.ID]}
	}
	if err == nil {
		err = s.removeImage(img)
	}
	unlock()
	if err != nil {
		return nil, err
	}
	if unlockGC, err := s.tryLockGC(); err == nil {
		defer unlockGC()
		_, err = s.collect()
		return img, err
	}
	return img, nil
}

// tryLockGC takes the lock of removing blobs and layers if no pull or
// Hold holds it.
func (s *Store) tryLockGC() (unlock func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return s.lockGC(ctx, unix.LOCK_EX)
}

// removeImage removes img's names, then its record. The caller holds
// lockMeta.
func (s *Store) removeImage(img *Image) error {
	for _, n := range img.Names {
		if err := s.removeRef(n); err != nil {
			return err
		}
	}
	err := os.Remove(s.path(imagesDir, hexOf(img.ID)+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Pruned is what Prune removed.
type Pruned struct {
	Images []*Image // the images removed
	Bytes  int64    // the bytes freed on disk
}

// Prune removes every image that no lease holds, then the blobs and
// layers that no image uses and what interrupted pulls left. It waits for
// the pulls under way and the holds (Hold) to end, or ctx.
func (s *Store) Prune(ctx context.Context) (*Pruned, error) {
	unlockGC, err := s.lockGC(ctx, unix.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer unlockGC()
	imgs, err := s.List()
	if err != nil {
		return nil, err
	}
	p := &Pruned{}
	unlock, err := s.lockMeta()
	if err != nil {
		return nil, err
	}
	held, err := s.holders()
	for _, img := range imgs {
		if err != nil {
			break
		}
		if len(held[img.ID]) == 0 {
			if err = s.removeImage(img); err == nil {
				p.Images = append(p.Images, img)
			}
		}
	}
	unlock()
	if err != nil {
		return p, err
	}
	p.Bytes, err = s.collect()
	return p, err
}

// collect removes the blobs and layers that no image's record uses,
// everything in tmp/ and the lock files of pulls, and returns the bytes
// it freed. The caller holds lockGC exclusive, so no pull is making any
// or holding its lock (a pull takes lockGC shared first), and no Hold
// is kept.
func (s *Store) collect() (int64, error) {
	blobs, layers, err := s.inUse()
	if err != nil {
		return 0, err
	}
	var freed int64
	var errs []error
	sweep := func(dir string, keep map[string]bool) {
		entries, err := os.ReadDir(s.path(dir))
		if err != nil {
			errs = append(errs, err)
			return
		}
		for _, e := range entries {
			if keep["sha256:"+e.Name()] {
				continue
			}
			// Renamed out of the way first, so that nothing half removed
			// looks whole.
			gone := s.path(tmpDir, "gone-"+strings.ReplaceAll(dir, "/", "-")+"-"+e.Name())
			if err := os.Rename(s.path(dir, e.Name()), gone); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	sweep(blobsDir, blobs)
	sweep(layersDir, layers)
	// The lock files of pulls, one per name ever pulled: none is held,
	// and a pull makes its own again.
	pullLocks, err := filepath.Glob(s.path(locksDir, "pull-*"))
	if err != nil {
		return 0, err
	}
	for _, l := range pullLocks {
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	entries, err := os.ReadDir(s.path(tmpDir))
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		p := s.path(tmpDir, e.Name())
		n, _ := DiskUsage(p)
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		freed += n
	}
	return freed, errors.Join(errs...)
}

// inUse returns the blobs (manifests, configs, layers) and the layers
// (by diff ID) that the images of the store use.
func (s *Store) inUse() (blobs, layers map[string]bool, err error) {
	imgs, err := s.List()
	if err != nil {
		return nil, nil, err
	}
	blobs, layers = map[string]bool{}, map[string]bool{}
	for _, img := range imgs {
		m, err := s.manifest(img)
		if err != nil {
			return nil, nil, err
		}
		blobs[img.ID], blobs[m.Config.Digest] = true, true
		for _, l := range m.Layers {
			blobs[l.Digest] = true
		}
		for _, l := range img.Layers {
			layers[l] = true
		}
	}
	return blobs, layers, nil
}

// A manifest is what the store reads of an image's manifest (OCI or
// Docker v2): the digests of the blobs it names.
type manifest struct {
	Config struct {
		Digest string `json:"digest"`
	} `json:"config"`
	Layers []struct {
		Digest string `json:"digest"`
	} `json:"layers"`
}

// manifest reads img's manifest from the store's blobs.
func (s *Store) manifest(img *Image) (*manifest, error) {
	b, err := os.ReadFile(s.BlobPath(img.ID))
	if err != nil {
		return nil, fmt.Errorf("the manifest of image %s: %w", img.ID, err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("the manifest of image %s: %w", img.ID, err)
	}
	return &m, nil
}

// LayerBlobs returns the digests of img's compressed layer blobs in the
// store, bottom first, as its manifest names them.
func (s *Store) LayerBlobs(img *Image) ([]string, error) {
	m, err := s.manifest(img)
	if err != nil {
		return nil, err
	}
	digests := make([]string, len(m.Layers))
	for i, l := range m.Layers {
		digests[i] = l.Digest
	}
	return digests, nil
}

// Size returns the bytes the store takes on disk: none when it is not
// there (OpenToRead).
func (s *Store) Size() (int64, error) {
	n, err := DiskUsage(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	return n, err
}

// DiskUsage returns the bytes that the files under p take on disk, each
// inode counted once.
func DiskUsage(p string) (int64, error) {
	var size int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(p, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		size += st.Blocks * 512
		return nil
	})
	return size, err
}
