package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/internal/pullexec"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
)

// envImageDir names the image store's directory when --image-dir does not.
const envImageDir = "UNITRUN_IMAGE_DIR"

// exitNoImage is the exit status of an image command given a name or ID
// the store does not hold, as exitNoPod is for pods.
const exitNoImage = 1

// imageDirFlag adds --image-dir, the image store's directory, to cmd.
func imageDirFlag(cmd *cobra.Command, dir *string) {
	def := image.DefaultDir
	if d := os.Getenv(envImageDir); d != "" {
		def = d
	}
	cmd.Flags().StringVar(dir, "image-dir", def, "the image store's `DIR` ($"+envImageDir+" sets the default)")
	cmd.RegisterFlagCompletionFunc("image-dir", cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs))
}

// checkImageDir checks dir, the image store's directory that --image-dir
// (or $UNITRUN_IMAGE_DIR) gives, before anything is made: an absolute path,
// and neither a file nor under one (exit 2), naming which of the two gave it.
func checkImageDir(dir string) error {
	// The flag's default comes from the variable: name what the user set.
	from := "--image-dir"
	if dir == os.Getenv(envImageDir) {
		from = "$" + envImageDir
	}
	if !filepath.IsAbs(dir) {
		return usageError(fmt.Errorf("%s %q: must be an absolute path", from, dir))
	}
	if fi, err := os.Stat(dir); errors.Is(err, syscall.ENOTDIR) || err == nil && !fi.IsDir() {
		return usageError(fmt.Errorf("%s %s: must be a directory, and it or one above it is a file", from, dir))
	}
	return nil
}

// openImageStore opens the store in dir, which --image-dir gave, with
// open: image.Open, or image.OpenToRead for commands that only read it.
func openImageStore(dir string, open func(string) (*image.Store, error)) (*image.Store, error) {
	if err := checkImageDir(dir); err != nil {
		return nil, err
	}
	s, err := open(dir)
	if err != nil {
		return nil, &exitError{code: exitFailed, err: err}
	}
	return s, nil
}

// imageError is the exit of an image command that failed: 2 for a name
// that is not an image reference or a credentials file that cannot be
// used, 1 for a name the store does not hold, 125 otherwise.
func imageError(err error) error {
	var re *image.RefError
	var ae *image.AuthFileError
	switch {
	case errors.As(err, &re), errors.As(err, &ae):
		return usageError(err)
	case errors.Is(err, image.ErrNotFound):
		return &exitError{code: exitNoImage, err: err}
	}
	return &exitError{code: exitFailed, err: err}
}

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Pull, list, inspect and remove the images pods run",
		Long: `The image store holds images pulled from registries: verified blobs and
layers unpacked once, shared by every image and pod that uses them.
See docs/images.md.

Exit statuses: 0 done; 1 a name or ID the store does not hold; 2 bad
flags or arguments (a name that is not an image reference, an --image-dir
that is relative or a file, a credentials file that cannot be used); 125
any other failure (the registry has no such image, refused the credentials
or cannot be reached, an image for another platform, the disk is full, an
image in use); 130 interrupted (Ctrl-C): a pull interrupted resumes where
it stopped.`,
	}
	cmd.AddCommand(newImagePullCmd(), newImageListCmd(), newImageInspectCmd(), newImageRmCmd(), newImagePruneCmd())
	return cmd
}

// completeImages completes the names of the images in the store that
// --image-dir names; it makes no store where there is none.
func completeImages(dir *string) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		s, err := image.OpenToRead(*dir)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		imgs, err := s.List()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, img := range imgs {
			for _, n := range img.Names {
				if strings.HasPrefix(n, prefix) && !slices.Contains(args, n) {
					names = append(names, n)
				}
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

func newImagePullCmd() *cobra.Command {
	var dir, authFile, policy string
	var asJSON, quiet bool
	cmd := &cobra.Command{
		Use:   "pull REF",
		Short: "Pull an image from its registry into the store",
		Long: `Pull REF (REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST; a
name without a registry is Docker Hub's) into the store, the host's
linux platform picked from a multi-platform index, every blob verified
against its digest, and print the image's ID.

Credentials come from --auth-file, else $REGISTRY_AUTH_FILE, else
$DOCKER_CONFIG/config.json, else ~/.docker/config.json (docker-style
"auths"). On a terminal a progress line shows layers, bytes and rate;
with --json, stdout gets one JSON line per layer as it completes, then the
image.`,
		Example: `  unitrun image pull quay.io/example/app:1.2
  unitrun image pull --json registry.example/ns/app@sha256:...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := image.Normalize(args[0]); err != nil {
				return usageError(err)
			}
			p, err := image.ParsePullPolicy(policy)
			if err != nil {
				return usageError(fmt.Errorf("--policy: %w", err))
			}
			s, err := openImageStore(dir, image.Open)
			if err != nil {
				return err
			}
			bar := newPullBar(newProgress(cmd.ErrOrStderr(), cmd.OutOrStdout(), quiet || asJSON), args[0])
			o := image.PullOptions{Policy: p, AuthFile: authFile, Progress: bar.update}
			if asJSON {
				o.Progress = func(pr image.Progress) {
					if pr.Complete {
						printLine(cmd.OutOrStdout(), map[string]any{"layer": pr.Layer, "size": pr.Total, "held": pr.Held})
					}
				}
			}
			stop := bar.p.ticking(bar.lines)
			img, err := pullImage(cmd.Context(), s, args[0], o)
			stop()
			if err != nil {
				return imageError(err)
			}
			if asJSON {
				return printLine(cmd.OutOrStdout(), img)
			}
			bar.pulled(img)
			fmt.Fprintln(cmd.OutOrStdout(), img.ID)
			return nil
		},
	}
	imageDirFlag(cmd, &dir)
	cmd.Flags().StringVar(&authFile, "auth-file", "", "a docker-style credentials `FILE` (config.json, auth.json)")
	cmd.Flags().StringVar(&policy, "policy", string(image.PullAlways), "when to reach the registry: Always, IfNotPresent (only when the store lacks REF) or Never")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "show no progress")
	jsonFlag(cmd, &asJSON, "print one JSON line per layer, then the image")
	return cmd
}

// A pullBar draws a pull's progress: its layers, bytes and rate.
type pullBar struct {
	p     *progress
	ref   string
	start time.Time

	mu     sync.Mutex
	layers int
	total  map[string]int64
	done   map[string]int64
	whole  map[string]bool // the layers complete
	drawn  time.Time
}

func newPullBar(p *progress, ref string) *pullBar {
	return &pullBar{p: p, ref: ref, start: time.Now(), total: map[string]int64{}, done: map[string]int64{}, whole: map[string]bool{}}
}

// update takes one step of the pull: a line for a layer that completed
// or that the store held (piped), the block redrawn at most ten times a second (on a terminal;
// ticking redraws it every second besides).
func (b *pullBar) update(pr image.Progress) {
	b.mu.Lock()
	b.layers, b.total[pr.Layer], b.done[pr.Layer] = pr.Layers, pr.Total, pr.Done
	first := pr.Complete && !b.whole[pr.Layer]
	if pr.Complete {
		b.whole[pr.Layer] = true
	}
	redraw := time.Since(b.drawn) >= 100*time.Millisecond
	if redraw {
		b.drawn = time.Now()
	}
	b.mu.Unlock()
	switch {
	case first && pr.Held:
		b.p.event("layer %s: already held", pr.Layer)
	case first:
		b.p.event("layer %s: %s", pr.Layer, bytesText(uint64(pr.Total)))
	}
	if redraw {
		b.p.draw(b.lines())
	}
}

// pulled tells that the pull of img is done: its layers and size.
func (b *pullBar) pulled(img *image.Image) {
	noun := "layers"
	if len(img.Layers) == 1 {
		noun = "layer"
	}
	b.p.event("pulled %s: %d %s, %s", b.ref, len(img.Layers), noun, bytesText(uint64(img.Size)))
}

// lines is the block drawn on a terminal.
func (b *pullBar) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.layers == 0 {
		return []string{"pulling " + b.ref + ": asking the registry"}
	}
	var done, total int64
	for l, t := range b.total {
		done, total = done+b.done[l], total+t
	}
	rate := float64(done) / max(time.Since(b.start).Seconds(), 0.001)
	bytes := bytesText(uint64(done))
	if len(b.total) == b.layers {
		// The sizes of the layers not begun are not known yet: a total
		// without them would say the pull is nearly done.
		bytes += "/" + bytesText(uint64(total))
	}
	return []string{fmt.Sprintf("pulling %s: %d/%d layers, %s, %s/s", b.ref, len(b.whole), b.layers, bytes, bytesText(uint64(rate)))}
}

func newImageListCmd() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the images in the store, with their sizes and the store's",
		Example: `  unitrun image list
  unitrun image ls --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := openImageStore(dir, image.OpenToRead)
			if err != nil {
				return err
			}
			imgs, err := s.List()
			if err != nil {
				return imageError(err)
			}
			size, err := s.Size()
			if err != nil {
				return imageError(err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"dir": s.Dir(), "size": size, "images": append([]*image.Image{}, imgs...)})
			}
			var rows [][]string
			for _, img := range imgs {
				names := img.Names
				if len(names) == 0 {
					names = []string{""}
				}
				for _, n := range names {
					rows = append(rows, []string{n, strings.TrimPrefix(img.ID, "sha256:")[:12], bytesText(uint64(img.Size)), img.Pulled.Format(time.RFC3339)})
				}
			}
			t := newTerm(cmd.OutOrStdout())
			if err := t.table([]string{"NAME", "ID", "SIZE", "PULLED"}, rows, -1); err != nil {
				return err
			}
			noun := "images"
			if len(imgs) == 1 {
				noun = "image"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d %s, %s on disk\n", s.Dir(), len(imgs), noun, bytesText(uint64(size)))
			return nil
		},
	}
	imageDirFlag(cmd, &dir)
	jsonFlag(cmd, &asJSON, `print {"dir", "size", "images": [...]} as JSON`)
	return cmd
}

func newImageInspectCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "inspect REF",
		Short: "Print an image of the store as JSON: its ID, names, config, layers and size",
		Long: `Print the image that REF (a name, its ID "sha256:HEX" or a unique prefix
of the ID) names in the store, as JSON, with the directories of its
unpacked layers, top first.`,
		Example: `  unitrun image inspect quay.io/example/app:1.2
  unitrun image inspect sha256:3f2a9c`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openImageStore(dir, image.OpenToRead)
			if err != nil {
				return err
			}
			img, err := s.Lookup(args[0])
			if err != nil {
				return imageError(err)
			}
			return printJSON(cmd.OutOrStdout(), struct {
				*image.Image
				LayerDirs []string `json:"layerDirs"`
			}{img, s.LayerDirs(img)})
		},
	}
	imageDirFlag(cmd, &dir)
	cmd.ValidArgsFunction = completeImages(&dir)
	return cmd
}

func newImageRmCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "rm REF...",
		Short: "Remove images (or one of an image's names) from the store",
		Long: `Remove each REF: a name of an image that has other names removes that name
only; otherwise, or given an ID, the image and its names go, then the blobs
and layers no other image uses. An image that a pod uses is refused, naming
the pod.`,
		Example: `  unitrun image rm quay.io/example/app:1.2
  unitrun image rm sha256:3f2a9c...`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := openImageStore(dir, image.Open)
			if err != nil {
				return err
			}
			var errs []error
			for _, ref := range args {
				img, err := s.Remove(ref)
				switch {
				case err != nil:
					errs = append(errs, inUse(ref, err))
				case img == nil:
					fmt.Fprintln(cmd.OutOrStdout(), "untagged", ref)
				default:
					fmt.Fprintln(cmd.OutOrStdout(), "removed", img.ID)
				}
			}
			if len(errs) > 0 {
				return imageError(errors.Join(errs...))
			}
			return nil
		},
	}
	imageDirFlag(cmd, &dir)
	cmd.ValidArgsFunction = completeImages(&dir)
	return cmd
}

// inUse tells a removal of ref that leases refused (an
// *image.InUseError) in the user's words: the pods that use the image and
// how to remove them, installed ones too (pod install leases the images). Any other err it returns as it is.
func inUse(ref string, err error) error {
	var iu *image.InUseError
	if !errors.As(err, &iu) {
		return err
	}
	var pods []string
	for _, h := range iu.Holders {
		name, ok := strings.CutPrefix(h, podrun.ImageHolder(""))
		if !ok {
			return err
		}
		pods = append(pods, name)
	}
	which, them, installed := "pod "+pods[0], "the pod", "unitrun pod uninstall "+pods[0]+" if it is installed"
	if len(pods) > 1 {
		which, them, installed = "pods "+strings.Join(pods, ", "), "the pods", "unitrun pod uninstall NAME of each installed one"
	}
	return &toldError{msg: fmt.Sprintf("%s is in use by %s: remove %s first (unitrun pod rm %s, or %s)", ref, which, them, strings.Join(pods, " "), installed), err: err}
}

func newImagePruneCmd() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove the images no pod uses, and the blobs and layers no image uses",
		Long: `Remove every image that no pod uses, then the blobs and layers that no image
uses, what interrupted pulls left and the lock files of pulls. Waits for
the pulls under way, and for the pod creations that have not leased their
images yet.`,
		Example: `  unitrun image prune`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := openImageStore(dir, image.Open)
			if err != nil {
				return err
			}
			p, err := s.Prune(cmd.Context())
			if err != nil {
				return imageError(err)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"removed": append([]*image.Image{}, p.Images...), "freed": p.Bytes})
			}
			for _, img := range p.Images {
				fmt.Fprintln(cmd.OutOrStdout(), "removed", img.ID)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "freed %s\n", bytesText(uint64(p.Bytes)))
			return nil
		},
	}
	imageDirFlag(cmd, &dir)
	jsonFlag(cmd, &asJSON, `print {"removed": [...], "freed"} as JSON`)
	return cmd
}

// pullImage pulls ref into s with o: from the store when o's policy lets
// it serve ref, else by unitrun-pull beside this binary (package
// internal/pullexec).
func pullImage(ctx context.Context, s *image.Store, ref string, o image.PullOptions) (*image.Image, error) {
	if img, err := s.Held(ref, o); img != nil || err != nil {
		return img, err
	}
	if err := checkAuthFile(o.AuthFile); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return pullexec.Pull(ctx, self, s.Dir(), ref, o)
}

// checkAuthFile checks, before a registry is asked, the credentials file
// that --auth-file (file) names, else the first of the usual ones that
// exists.
func checkAuthFile(file string) error {
	_, err := image.ReadAuthFile(file)
	var ae *image.AuthFileError
	if errors.As(err, &ae) && ae.Var == "" {
		return fmt.Errorf("--auth-file: %w", err)
	}
	return err
}

// pullAppImage is podrun.Runner.Pull for pod create and run: app a's
// image under its pull policy, into store s.
func pullAppImage(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error) {
	return pullImage(ctx, s, a.Image, image.PullOptions{Policy: a.PullPolicy()})
}
