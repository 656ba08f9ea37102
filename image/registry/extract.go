package registry

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/unitrun/unitrun/image"
)

// maxLinks is how many symlinks ExtractFile follows for one path, as
// Linux's own limit.
const maxLinks = 40

// ExtractFile writes to w the regular file at path p (absolute) of image
// ref, as the image's root shows it, and returns its permission bits,
// without unpacking the image: it reads the layers' tars top first,
// honouring whiteouts, opaque directories and symlinks (in p and its
// directories, resolved inside the image), and stops at the first layer
// that settles p. It reads the store's blobs when the store holds ref
// (under o.Policy, as Pull), else the registry's, adding nothing to the
// store; a layer read from the registry is read to its end, so that its
// digest is checked, before ExtractFile returns. On an error, what was
// written to w is to be thrown away. A path the image does not have is
// fs.ErrNotExist; one that is not a regular file, image.ErrNotFile.
func ExtractFile(ctx context.Context, s *image.Store, ref, p string, o image.PullOptions, w io.Writer) (fs.FileMode, error) {
	if !path.IsAbs(p) || path.Clean(p) == "/" {
		return 0, fmt.Errorf("path %q: must be the absolute path of a file in the image", p)
	}
	n, err := image.Normalize(ref)
	if err != nil {
		return 0, err
	}
	r, err := name.ParseReference(n)
	if err != nil {
		return 0, &image.RefError{Ref: ref, Err: err}
	}
	img, err := s.Held(ref, image.PullOptions{Policy: o.Policy})
	var layers []opener
	switch {
	case err != nil:
		return 0, err
	case img != nil:
		if layers, err = heldLayers(s, img); err != nil {
			return 0, err
		}
	default:
		keys, err := newKeychain(o)
		if err != nil {
			return 0, err
		}
		if layers, err = remoteLayers(ctx, r, keys); err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, pullError(s, r, keys, err)
		}
	}
	mode, err := find(layers, strings.TrimPrefix(path.Clean(p), "/"), w)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("%s in %s: %w", p, r.Name(), err)
	}
	return mode, nil
}

// An opener opens one layer's compressed blob.
type opener func() (io.ReadCloser, error)

// heldLayers returns the openers of img's layer blobs in the store, top
// first.
func heldLayers(s *image.Store, img *image.Image) ([]opener, error) {
	digests, err := s.LayerBlobs(img)
	if err != nil {
		return nil, err
	}
	var layers []opener
	for i := len(digests) - 1; i >= 0; i-- {
		digest := digests[i]
		layers = append(layers, func() (io.ReadCloser, error) {
			f, err := os.Open(s.BlobPath(digest))
			if err != nil {
				// Not the image's fs.ErrNotExist: the store's damage.
				return nil, fmt.Errorf("the store's blob %s: %v", digest, err)
			}
			return f, nil
		})
	}
	return layers, nil
}

// remoteLayers returns the openers of the layer blobs of the image that
// r names in its registry, for the host's platform, top first.
func remoteLayers(ctx context.Context, r name.Reference, keys *keychain) ([]opener, error) {
	img, err := remoteImage(ctx, r, keys)
	if err != nil {
		return nil, err
	}
	ls, err := img.Layers()
	if err != nil {
		return nil, err
	}
	var layers []opener
	for i := len(ls) - 1; i >= 0; i-- {
		layers = append(layers, ls[i].Compressed)
	}
	return layers, nil
}

// A settled is what one layer says of the path looked for.
type settled int

const (
	unsettled settled = iota // nothing: look in the layer below
	found                    // the file, copied
	hidden                   // a whiteout, an opaque directory or a file in the way
	moved                    // a symlink: look again, for another path, from the top
)

// find copies the file at p (relative to the root) that layers (top
// first) make, to w.
func find(layers []opener, p string, w io.Writer) (fs.FileMode, error) {
	for hops := 0; hops <= maxLinks; hops++ {
		dirs := map[string]bool{} // p's directories that upper layers have as directories
		var next string
	layers:
		for _, open := range layers {
			verdict, mode, to, err := scan(open, p, dirs, w)
			if err != nil {
				return 0, err
			}
			switch verdict {
			case found:
				return mode, nil
			case hidden:
				return 0, fs.ErrNotExist
			case moved:
				next = to
				break layers
			}
		}
		if next == "" {
			return 0, fs.ErrNotExist
		}
		p = next
	}
	return 0, fmt.Errorf("too many levels of symbolic links, %w", image.ErrNotFile)
}

// scan reads one layer for p: it copies p's content to w if the layer has
// it, or says why the layers below do not count, or where a symlink
// leads. dirs holds the directories of p that upper layers have (as
// directories); scan adds this layer's.
func scan(open opener, p string, dirs map[string]bool, w io.Writer) (settled, fs.FileMode, string, error) {
	rc, err := open()
	if err != nil {
		return 0, 0, "", err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 1<<16)
	dec, err := decompress(br)
	if err != nil {
		return 0, 0, "", err
	}
	defer dec.Close()
	tr := tar.NewReader(dec)
	verdict, mode, to := unsettled, fs.FileMode(0), ""
	var layerDirs []string
	for verdict != found {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, "", err
		}
		n := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		dir, base := path.Split(n)
		dir = strings.TrimSuffix(dir, "/")
		switch {
		case n == p:
			switch hdr.Typeflag {
			case tar.TypeReg:
				if _, err := io.Copy(w, tr); err != nil {
					return 0, 0, "", err
				}
				verdict, mode = found, fs.FileMode(hdr.Mode).Perm()
			case tar.TypeSymlink:
				verdict, to = moved, resolve(dir, hdr.Linkname)
			case tar.TypeLink:
				// A hard link's target is an earlier entry of this layer.
				lv, lmode, lto, err := scan(open, strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/"), map[string]bool{}, w)
				if err != nil {
					return 0, 0, "", err
				}
				return lv, lmode, lto, nil
			case tar.TypeDir:
				return 0, 0, "", fmt.Errorf("a directory, %w", image.ErrNotFile)
			default:
				return 0, 0, "", image.ErrNotFile
			}
		case base == opaqueMarker && under(p, dir):
			if verdict == unsettled {
				verdict = hidden
			}
		case strings.HasPrefix(base, whiteoutPrefix) && (path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix)) == p || under(p, path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix)))):
			if verdict == unsettled {
				verdict = hidden
			}
		case under(p, n):
			switch {
			case hdr.Typeflag == tar.TypeDir:
				layerDirs = append(layerDirs, n)
			case hdr.Typeflag == tar.TypeSymlink && !dirs[n]:
				verdict, to = moved, path.Join(resolve(dir, hdr.Linkname), strings.TrimPrefix(p, n+"/"))
			default:
				verdict = hidden
			}
		}
	}
	// The rest of the blob is read so that a reader that checks its
	// digest at the end does, before anything read from it counts.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return 0, 0, "", err
	}
	for _, d := range layerDirs {
		dirs[d] = true
	}
	return verdict, mode, to, nil
}

// under reports whether p is under directory dir ("" being the root).
func under(p, dir string) bool {
	return dir == "" || strings.HasPrefix(p, dir+"/")
}

// resolve returns where a symlink in dir to target leads, relative to the
// image's root (which ".." does not leave).
func resolve(dir, target string) string {
	if path.IsAbs(target) {
		return strings.TrimPrefix(path.Clean(target), "/")
	}
	return strings.TrimPrefix(path.Clean("/"+path.Join(dir, target)), "/")
}
