package registry

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// The names by which a layer's tar marks what it removes from the layers
// below (the OCI image spec's whiteouts).
const (
	whiteoutPrefix = ".wh."
	opaqueMarker   = ".wh..wh..opq"
	// opaqueXattr is how overlayfs marks a directory that hides the
	// directories of the same path below it.
	opaqueXattr = "trusted.overlay.opaque"
)

// decompress returns the uncompressed stream of a layer blob, gzip, zstd
// or plain tar, told apart by their first bytes.
func decompress(r *bufio.Reader) (io.ReadCloser, error) {
	magic, _ := r.Peek(4)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		return gzip.NewReader(r)
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		d, err := zstd.NewReader(r)
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}
	return io.NopCloser(r), nil
}

// unpack writes the layer blob that r reads into dir, in overlayfs form,
// and returns its diff ID (the digest of its uncompressed tar). It reads r to its end, so that a reader that
// checks a digest there does.
func unpack(r io.Reader, dir string) (diffID v1.Hash, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	dec, err := decompress(br)
	if err != nil {
		return v1.Hash{}, err
	}
	defer dec.Close()
	h := sha256.New()
	tarStream := io.TeeReader(dec, h)
	u := unpacker{root: dir, dirs: map[string]bool{"": true}}
	tr := tar.NewReader(tarStream)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return v1.Hash{}, fmt.Errorf("reading the layer: %w", err)
		}
		if err := u.entry(hdr, tr); err != nil {
			return v1.Hash{}, fmt.Errorf("%s: %w", hdr.Name, err)
		}
	}
	// The tar's end padding counts in the diff ID, and the blob's end is
	// where its digest is checked.
	if _, err := io.Copy(io.Discard, tarStream); err != nil {
		return v1.Hash{}, fmt.Errorf("reading the layer: %w", err)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return v1.Hash{}, fmt.Errorf("reading the layer: %w", err)
	}
	for _, d := range u.times {
		ts := []unix.Timespec{unix.NsecToTimespec(d.atime.UnixNano()), unix.NsecToTimespec(d.mtime.UnixNano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, d.path, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return v1.Hash{}, err
		}
	}
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}, nil
}

// An unpacker writes one layer's entries under root.
type unpacker struct {
	root string
	// dirs are the paths (relative, slash-separated) known to be
	// directories of this layer, not symlinks.
	dirs map[string]bool
	// times are the directories whose times are set last, once nothing
	// is written in them any more.
	times []dirTime
}

type dirTime struct {
	path         string
	atime, mtime time.Time
}

// parent makes sure the directories of rel's parent exist in the layer
// (made 0755 when the tar has no entry of their own) and that none is a
// symlink, so no entry is written outside the layer, and returns its path.
func (u *unpacker) parent(rel string) (string, error) {
	dir := path.Dir(rel)
	if dir == "." {
		return u.root, nil
	}
	p := ""
	for c := range strings.SplitSeq(dir, "/") {
		p = path.Join(p, c)
		if u.dirs[p] {
			continue
		}
		full := filepath.Join(u.root, p)
		fi, err := os.Lstat(full)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(full, 0o755); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		case !fi.IsDir():
			return "", fmt.Errorf("the path goes through %s, which the layer makes a %s", p, kind(fi.Mode()))
		}
		u.dirs[p] = true
	}
	return filepath.Join(u.root, dir), nil
}

func kind(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "symlink"
	}
	return "file"
}

// entry writes one tar entry.
func (u *unpacker) entry(hdr *tar.Header, r io.Reader) error {
	rel := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
	if rel == "" {
		if hdr.Typeflag != tar.TypeDir {
			return errors.New("the layer's root is not a directory")
		}
		return u.attrs(u.root, hdr)
	}
	parent, err := u.parent(rel)
	if err != nil {
		return err
	}
	base := path.Base(rel)
	if base == opaqueMarker {
		return unix.Lsetxattr(parent, opaqueXattr, []byte("y"), 0)
	}
	if hidden, ok := strings.CutPrefix(base, whiteoutPrefix); ok {
		p := filepath.Join(parent, hidden)
		if err := u.clear(p, path.Join(path.Dir(rel), hidden), false); err != nil {
			return err
		}
		return unix.Mknod(p, unix.S_IFCHR, 0)
	}
	p := filepath.Join(u.root, rel)
	if err := u.clear(p, rel, hdr.Typeflag == tar.TypeDir); err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		u.dirs[rel] = true
	case tar.TypeReg:
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		if err := os.Symlink(hdr.Linkname, p); err != nil {
			return err
		}
	case tar.TypeLink:
		target := strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/")
		tp, err := u.parent(target)
		if err != nil {
			return fmt.Errorf("hard link to %s: %w", hdr.Linkname, err)
		}
		if err := os.Link(filepath.Join(tp, path.Base(target)), p); err != nil {
			return err
		}
		return nil // the link shares its target's attributes
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		mode := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[hdr.Typeflag]
		dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
		if err := unix.Mknod(p, mode|0o600, int(dev)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("the layer has an entry of tar type %q, which an image's layer does not hold", hdr.Typeflag)
	}
	return u.attrs(p, hdr)
}

// clear makes room at p for an entry: it removes what an earlier entry of
// the same path left there, but keeps a directory for a directory entry.
func (u *unpacker) clear(p, rel string, dir bool) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if dir && fi.IsDir() {
		return nil
	}
	for d := range u.dirs {
		if d == rel || strings.HasPrefix(d, rel+"/") {
			delete(u.dirs, d)
		}
	}
	return os.RemoveAll(p)
}

// attrs gives p the owner, mode, extended attributes and times of hdr.
func (u *unpacker) attrs(p string, hdr *tar.Header) error {
	if err := os.Lchown(p, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	for k, v := range hdr.PAXRecords {
		if x, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok && keptXattr(x) {
			if err := unix.Lsetxattr(p, x, []byte(v), 0); err != nil {
				return fmt.Errorf("extended attribute %s: %w", x, err)
			}
		}
	}
	symlink := hdr.Typeflag == tar.TypeSymlink
	if !symlink {
		// After the chown, which clears the set-user-ID and set-group-ID bits.
		if err := unix.Chmod(p, uint32(hdr.Mode&0o7777)); err != nil {
			return err
		}
	}
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = hdr.ModTime
	}
	if hdr.Typeflag == tar.TypeDir {
		u.times = append(u.times, dirTime{p, atime, hdr.ModTime})
		return nil
	}
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// keptXattr reports whether a layer's extended attribute x is written: not
// overlayfs's own (trusted.overlay.*: only the whiteouts of the image spec
// steer the overlay, never a layer's xattrs) and not an SELinux label
// (the host's policy labels the files).
func keptXattr(x string) bool {
	return !strings.HasPrefix(x, "trusted.overlay.") && x != "security.selinux"
}
