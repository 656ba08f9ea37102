// Package image is the content-addressed store on the host of the OCI and
// Docker v2 images that package image/registry pulls, and gives pods and
// inject what they need of them: the image's layers unpacked in overlayfs
// form, shared by every image and pod that uses them, and its config. It
// links the standard library and golang.org/x/sys only (TestDeps), since
// every unitrun process links it: the registry's side, with
// go-containerregistry and the inits it brings, is image/registry, which
// unitrun runs in the unitrun-pull binary.
//
// The store's layout, under its directory (default [DefaultDir]):
//
//	blobs/sha256/HEX     verified blobs: manifests, configs, compressed layers
//	layers/sha256/HEX/   one unpacked layer, by its uncompressed digest (diff ID),
//	                     in overlayfs form: a whiteout is a 0/0 character device,
//	                     an opaque directory has trusted.overlay.opaque=y; it is
//	                     complete once it exists (unpacked aside, then renamed)
//	images/HEX.json      an image's record, by its manifest digest ([Image])
//	refs/NAME            the image ID that a name points to (NAME path-escaped)
//	leases/HOLDER/HEX    that holder (a pod) uses image HEX (HOLDER path-escaped)
//	locks/               the locks that order pulls, removals and leases
//	                     (a pull's, locks/pull-HASH, until Prune removes it)
//	tmp/pull-*/          one pull's blobs and layers under way, renamed into
//	                     place when whole and verified (tmp/pull-*.lock is
//	                     held while the pull runs)
//
// Nothing in the store is half-written: every file and directory is made
// aside and renamed into place, so an interrupted pull leaves no image that
// can run, and the next pull keeps the blobs and layers it completed (and
// removes what a killed pull left in tmp/). An image's record is written
// last, once every layer it names is whole.
//
// Pulls of one name are done one at a time across processes (a lock per
// name); a pull holds the store's gc lock shared, so that Prune and the
// collection after Remove, which hold it exclusive, never take blobs and
// layers that a pull has made before its record names them.
package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// DefaultDir is the store's directory unless a caller says otherwise: on
// disk, since images outlive a boot.
const DefaultDir = "/var/lib/unitrun/images"

// ErrNotFound is returned for a name or digest the store does not hold.
var ErrNotFound = errors.New("no such image in the store")

// An Image is one image in the store.
type Image struct {
	// ID is the image's manifest digest, "sha256:HEX", as Kubernetes
	// reports it in a container's imageID.
	ID string `json:"id"`
	// Names are the references that point to it, normalized
	// ("registry.example/ns/name:tag").
	Names []string `json:"names,omitzero"`
	// Config is what the image's config says about running it.
	Config Config `json:"config"`
	// Layers are the diff IDs of its layers, bottom first.
	Layers []string `json:"layers"`
	// Size is the bytes its unpacked layers take, shared ones included.
	Size int64 `json:"size"`
	// Pulled is when it was pulled.
	Pulled time.Time `json:"pulled"`
}

// Config is the part of an image's config that says how to run it.
type Config struct {
	Entrypoint []string `json:"entrypoint,omitzero"`
	Cmd        []string `json:"cmd,omitzero"`
	Env        []string `json:"env,omitzero"`
	WorkingDir string   `json:"workingDir,omitzero"`
	User       string   `json:"user,omitzero"`
}

// A Store is the image store in one directory.
type Store struct {
	dir string
}

// The store's subdirectories.
const (
	blobsDir  = "blobs/sha256"
	layersDir = "layers/sha256"
	imagesDir = "images"
	refsDir   = "refs"
	leasesDir = "leases"
	locksDir  = "locks"
	tmpDir    = "tmp"
)

// Open opens the store in dir, making it if need be.
func Open(dir string) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("the image store's directory %q is not an absolute path", dir)
	}
	for _, sub := range []string{blobsDir, layersDir, imagesDir, refsDir, leasesDir, locksDir, tmpDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is the store's, named below
			}
			return nil, fmt.Errorf("the image store %s cannot be opened: %w", dir, err)
		}
	}
	return &Store{dir: dir}, nil
}

// OpenToRead opens the store in dir to read it, making nothing: a store
// that is not there holds no image.
func OpenToRead(dir string) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("the image store's directory %q is not an absolute path", dir)
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("the image store %s cannot be opened: %w", dir, unix.ENOTDIR)
	}
	return &Store{dir: dir}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// path joins elems under the store's directory.
func (s *Store) path(elems ...string) string {
	return filepath.Join(append([]string{s.dir}, elems...)...)
}

// hexOf returns the HEX of a "sha256:HEX" digest, or "" if d is not one.
func hexOf(d string) string {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 || !isHex(h) {
		return ""
	}
	return h
}

// isHex reports whether s is 1 to 64 lower-case hex digits. (A regexp
// compiled at init would cost every run of unitrun.)
func isHex(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// BlobPath is where the store keeps blob digest ("sha256:HEX").
func (s *Store) BlobPath(digest string) string {
	return s.path(blobsDir, hexOf(digest))
}

// LayerPath is where the store keeps the layer of diff ID diffID,
// complete once it exists.
func (s *Store) LayerPath(diffID string) string {
	return s.path(layersDir, hexOf(diffID))
}

// LayerDirs returns the directories of img's unpacked layers, top first,
// as overlayfs's lowerdir lists them.
func (s *Store) LayerDirs(img *Image) []string {
	dirs := make([]string, len(img.Layers))
	for i, l := range img.Layers {
		dirs[len(dirs)-1-i] = s.LayerPath(l)
	}
	return dirs
}

// Lookup returns the image that ref (a name or "sha256:HEX", or an ID's
// unique prefix) names in the store, without reaching a registry.
func (s *Store) Lookup(ref string) (*Image, error) {
	if p, ok := strings.CutPrefix(ref, "sha256:"); ok {
		return s.lookupID(p)
	}
	if len(ref) >= 12 && isHex(ref) {
		if img, err := s.lookupID(ref); !errors.Is(err, ErrNotFound) {
			return img, err
		}
	}
	n, err := Normalize(ref)
	if err != nil {
		return nil, err
	}
	id, err := s.readRef(n)
	if err != nil {
		return nil, err
	}
	return s.record(id)
}

// lookupID returns the image whose ID's HEX starts with prefix, if one
// alone does.
func (s *Store) lookupID(prefix string) (*Image, error) {
	if !isHex(prefix) {
		return nil, fmt.Errorf("%q is not an image ID (sha256: and up to 64 hex digits)", "sha256:"+prefix)
	}
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	var found []string
	for _, id := range ids {
		if strings.HasPrefix(hexOf(id), prefix) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("sha256:%s: %w", prefix, ErrNotFound)
	case 1:
		return s.record(found[0])
	}
	return nil, fmt.Errorf("sha256:%s names %d images: give more of the ID", prefix, len(found))
}

// ids returns the IDs of every image in the store.
func (s *Store) ids() ([]string, error) {
	entries, err := os.ReadDir(s.path(imagesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a store not made yet (OpenToRead)
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if h, ok := strings.CutSuffix(e.Name(), ".json"); ok && hexOf("sha256:"+h) != "" {
			ids = append(ids, "sha256:"+h)
		}
	}
	return ids, nil
}

// record reads the record of image id, with the names that point to it.
func (s *Store) record(id string) (*Image, error) {
	refs, err := s.refs()
	if err != nil {
		return nil, err
	}
	return s.recordNamed(id, refs)
}

// recordNamed reads the record of image id, with its names in refs (as
// refs returns them).
func (s *Store) recordNamed(id string, refs map[string]string) (*Image, error) {
	b, err := os.ReadFile(s.path(imagesDir, hexOf(id)+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var img Image
	if err := json.Unmarshal(b, &img); err != nil {
		return nil, fmt.Errorf("image record %s: %w", id, err)
	}
	for n, to := range refs {
		if to == img.ID {
			img.Names = append(img.Names, n)
		}
	}
	slices.Sort(img.Names)
	return &img, nil
}

// writeRecord writes img's record, without its names (refs/ holds them).
func (s *Store) writeRecord(img *Image) error {
	rec := *img
	rec.Names = nil
	b, err := json.MarshalIndent(&rec, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path(imagesDir, hexOf(img.ID)+".json"), append(b, '\n'), 0o600)
}

// readRef returns the image ID that name n points to.
func (s *Store) readRef(n string) (string, error) {
	b, err := os.ReadFile(s.path(refsDir, url.PathEscape(n)))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", n, ErrNotFound)
	}
	return strings.TrimSpace(string(b)), err
}

// writeRef points name n at image id.
func (s *Store) writeRef(n, id string) error {
	return atomicfile.Write(s.path(refsDir, url.PathEscape(n)), []byte(id+"\n"), 0o600)
}

// removeRef removes name n.
func (s *Store) removeRef(n string) error {
	err := os.Remove(s.path(refsDir, url.PathEscape(n)))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// refs returns every name in the store and the image ID it points to.
func (s *Store) refs() (map[string]string, error) {
	entries, err := os.ReadDir(s.path(refsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // a store not made yet (OpenToRead)
	}
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // a ref being written
		}
		n, err := url.PathUnescape(e.Name())
		if err != nil {
			continue
		}
		if id, err := s.readRef(n); err == nil {
			refs[n] = id
		}
	}
	return refs, nil
}
