package podrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/manager/boot"
	"github.com/unitrun/unitrun/pod"
)

// ImageHolder is the holder of the leases that pod name takes on its
// images in the store ([image.Store.Lease]), which keep them from
// removal until the pod is removed.
func ImageHolder(name string) string { return "pod/" + name }

// imageDir is the directory of the store that r's pods take images from.
func (r *Runner) imageDir() string {
	if r.ImageDir != "" {
		return r.ImageDir
	}
	return image.DefaultDir
}

// errNoPull is the creation of a pod with an image by a Runner that
// cannot pull.
var errNoPull = errors.New("this program pulls no images")

// pull gets the image of app a of a pod being created into store s under
// its pull policy ([pod.App.PullPolicy]), by r.Pull.
func (r *Runner) pull(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error) {
	if r.Pull == nil {
		return nil, errNoPull
	}
	return r.Pull(ctx, s, a)
}

// A PullError is a pull of an app's image that failed for a reason other
// than the manifest (refused credentials, a registry out of reach, a full
// disk, an interrupt): it names the app's field as an *InvalidError does,
// Path being the field ("apps[1].image") and Image its value.
type PullError struct {
	Path  string
	Image string
	Err   error
}

func (e *PullError) Error() string { return fmt.Sprintf("%s %q: %v", e.Path, e.Image, e.Err) }
func (e *PullError) Unwrap() error { return e.Err }

// holdImages opens the image store of r's pods, if an app of m names an
// image, and holds it ([image.Store.Hold]) until release is called: a
// pod's creation holds it from before its first pull until it ends, its
// leases taken. A pod without images opens no store, and its release
// does nothing.
func (r *Runner) holdImages(ctx context.Context, m *pod.Manifest) (s *image.Store, release func(), err error) {
	if !slices.ContainsFunc(m.Apps, func(a pod.App) bool { return a.Image != "" }) {
		return nil, func() {}, nil
	}
	if s, err = image.Open(r.imageDir()); err != nil {
		return nil, nil, err // naming the directory
	}
	if release, err = s.Hold(ctx); err != nil {
		return nil, nil, fmt.Errorf("the image store %s cannot be locked against a prune: %w", s.Dir(), err)
	}
	return s, release, nil
}

// resolveImages pulls, into store s, the image of each app of m that
// names one (pullImages) and applies it to the app
// ([pod.Manifest.ApplyImage]), before anything of the pod is created.
// An image whose config or files the app cannot run with is an
// *InvalidError naming the field, as pullImages tells a bad reference.
func (r *Runner) resolveImages(ctx context.Context, s *image.Store, m *pod.Manifest) error {
	return r.pullImages(ctx, s, m.Apps, func(i int, img *image.Image) error {
		if err := m.ApplyImage(r.StateDir, s.Dir(), i, img, imageFiles(s.LayerDirs(img))); err != nil {
			return err
		}
		if err := imageOverlay(r.StateDir, m.Name, m.Apps[i].Name, s, img).Check(); err != nil {
			return &pod.FieldError{Path: fmt.Sprintf("apps[%d].image", i), Value: m.Apps[i].Image, Rule: "cannot be mounted: " + err.Error()}
		}
		return nil
	})
}

// CheckImages pulls the images of apps, those of a pod refused before
// its images are pulled (a Kubernetes Pod that does not map), under their
// pull policies, so that their errors are told with its other problems:
// pullImages's errors, without applying the images. It takes no lease.
func (r *Runner) CheckImages(ctx context.Context, apps []pod.App) error {
	if !slices.ContainsFunc(apps, func(a pod.App) bool { return a.Image != "" }) {
		return nil
	}
	s, err := image.Open(r.imageDir())
	if err != nil {
		return err
	}
	return r.pullImages(ctx, s, apps, func(int, *image.Image) error { return nil })
}

// pullImages pulls, into store s, the image of each of apps that names
// one (once per image and policy, a failed pull too), and calls apply
// with the app's index and each image pulled. A bad reference, and an
// image that neither the store (under policy Never) nor its registry
// has, are an *InvalidError naming the field (apps[1].image), as are
// apply's errors; other failures of a pull (refused credentials, a
// registry out of reach, a full disk) are a *PullError, several joined
// (errors.Join). Every app's image is tried, and every error returned:
// an *InvalidError that holds the *PullErrors too when there are both,
// the manifest having to change whatever the registries do. An
// interrupt ends the pulls at once, with its *PullError alone.
func (r *Runner) pullImages(ctx context.Context, s *image.Store, apps []pod.App, apply func(i int, img *image.Image) error) error {
	var errs, pulls []error
	type pull struct {
		img *image.Image
		err error
	}
	pulled := map[string]pull{} // by reference and policy
	for i := range apps {
		a := &apps[i]
		if a.Image == "" {
			continue
		}
		key := a.Image + " " + string(a.PullPolicy())
		p, ok := pulled[key]
		if !ok {
			p.img, p.err = r.pull(ctx, s, a)
			pulled[key] = p
		}
		img, err := p.img, p.err
		var refErr *image.RefError
		switch {
		case errors.As(err, &refErr) || errors.Is(err, image.ErrNotFound) || errors.Is(err, image.ErrUnknown):
			// What the manifest names does not exist: bad input.
			errs = append(errs, &pod.FieldError{Path: fmt.Sprintf("apps[%d].image", i), Value: a.Image, Rule: err.Error()})
			continue
		case err != nil:
			pe := &PullError{Path: fmt.Sprintf("apps[%d].image", i), Image: a.Image, Err: err}
			if ctx.Err() != nil {
				return pe
			}
			pulls = append(pulls, pe)
			continue
		}
		if err := apply(i, img); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return &InvalidError{Err: errors.Join(append(errs, pulls...)...)}
	}
	return errors.Join(pulls...)
}

// takeLeases takes the leases of pod m, whose images resolveImages
// applied, in their store.
func takeLeases(m *pod.Manifest) error {
	if m.ImageDir == "" {
		return nil
	}
	s, err := image.Open(m.ImageDir)
	if err != nil {
		return err
	}
	for _, a := range m.Apps {
		if a.ImageID == "" {
			continue
		}
		if err := s.Lease(ImageHolder(m.Name), a.ImageID); err != nil {
			return fmt.Errorf("image %s: %w", a.Image, err)
		}
	}
	return nil
}

// leaseImages takes the leases of pod m, whose images resolveImages
// applied (takeLeases), and makes each image app's root, writable layer
// and work directory ([pod.ImageRoot]) in the pod's state.
func (r *Runner) leaseImages(m *pod.Manifest) error {
	if err := takeLeases(m); err != nil {
		return err
	}
	for _, a := range m.Apps {
		if a.ImageID == "" {
			continue
		}
		d := pod.ImageRoot(r.StateDir, m.Name, a.Name)
		for _, dir := range []string{d.Root(), d.Upper(), d.Work()} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReleaseImages drops pod name's leases, in the store its spec names; a
// pod whose spec names none took none. Where the spec cannot be read (a
// pod installed but never created: [Runner.Install]), in r's store, if
// it exists.
func (r *Runner) ReleaseImages(name string) error {
	dir := r.imageDir()
	if m, err := pod.LoadSpec(r.StateDir, name); err == nil {
		if dir = m.ImageDir; dir == "" {
			return nil
		}
	} else if _, err := os.Stat(dir); err != nil {
		return nil
	}
	s, err := image.Open(dir)
	if err != nil {
		return err
	}
	return s.Release(ImageHolder(name))
}

// imageOverlays are the roots of pod m's apps that have images: each
// app's image's layers, as the store holds them, under its writable
// layer in the pod's state, mounted at its rootfs.
func imageOverlays(stateDir string, m *pod.Manifest) ([]boot.Overlay, error) {
	if m.ImageDir == "" {
		return nil, nil
	}
	s, err := image.Open(m.ImageDir)
	if err != nil {
		return nil, err
	}
	var ovs []boot.Overlay
	for _, a := range m.Apps {
		if a.ImageID == "" {
			continue
		}
		img, err := s.Lookup(a.ImageID)
		if err != nil {
			return nil, fmt.Errorf("app %s: image %s (%s): %w", a.Name, a.Image, a.ImageID, err)
		}
		ovs = append(ovs, imageOverlay(stateDir, m.Name, a.Name, s, img))
	}
	return ovs, nil
}

// imageOverlay is the root of app of pod name whose image is img, in
// store s.
func imageOverlay(stateDir, name, app string, s *image.Store, img *image.Image) boot.Overlay {
	d := pod.ImageRoot(stateDir, name, app)
	return boot.Overlay{Root: d.Root(), Upper: d.Upper(), Work: d.Work(), Lower: s.LayerDirs(img)}
}

// imageFiles reads the files that resolve an image's users from its
// layers, dirs, top first.
func imageFiles(dirs []string) pod.ImageFiles {
	return pod.ImageFiles{Passwd: layerFile(dirs, "etc/passwd"), Group: layerFile(dirs, "etc/group")}
}

// layerFile returns the content of the regular file at path (relative,
// under directories that are not symlinks) in the image whose unpacked
// layers are dirs, top first, in overlayfs form: the file of the topmost
// layer that has it, nil if none has it or a layer above removes it (a
// whiteout of it or of a directory above it, or an opaque directory
// above it in a layer that lacks it).
func layerFile(dirs []string, path string) []byte {
	parts := strings.Split(path, "/")
	for _, dir := range dirs {
		for i := range parts {
			p := filepath.Join(dir, filepath.Join(parts[:i+1]...))
			fi, err := os.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				if i > 0 && opaque(filepath.Dir(p)) {
					return nil
				}
				break
			}
			if err != nil || whiteout(fi) {
				return nil
			}
			if i < len(parts)-1 {
				if !fi.IsDir() {
					return nil
				}
				continue
			}
			if !fi.Mode().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			return data
		}
	}
	return nil
}

// whiteout reports whether fi is an overlayfs whiteout: a character
// device 0/0.
func whiteout(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*unix.Stat_t)
	return ok && fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0
}

// opaque reports whether directory dir of a layer is opaque: it hides
// the layers below it.
func opaque(dir string) bool {
	buf := make([]byte, 1)
	n, err := unix.Lgetxattr(dir, "trusted.overlay.opaque", buf)
	return err == nil && n == 1 && buf[0] == 'y'
}
