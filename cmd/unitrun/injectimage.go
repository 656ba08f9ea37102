package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/inject"
	"github.com/unitrun/unitrun/internal/pullexec"
)

// imageSource is inject's --image REF --path PATH: a file out of an image.
type imageSource struct {
	ref, path, imageDir, authFile, policy string
}

func (f *imageSource) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.ref, "image", "", "copy --path out of the image `REF` instead of a file of the host")
	cmd.Flags().StringVar(&f.path, "path", "", "the absolute `PATH` of the file in the --image")
	imageDirFlag(cmd, &f.imageDir)
	cmd.Flags().StringVar(&f.authFile, "auth-file", "", "a docker-style credentials `FILE`, for --image")
	cmd.Flags().StringVar(&f.policy, "policy", string(image.PullIfNotPresent), "for --image: read the store's copy (IfNotPresent), the registry's (Always), or only the store's (Never)")
	cmd.RegisterFlagCompletionFunc("image", completeImages(&f.imageDir))
}

// inject copies the file out of the image into dir, through a temp file
// of the file's name and mode that inject.Install then copies, and
// returns the installed path.
func (f *imageSource) inject(ctx context.Context, dir string) (string, error) {
	switch {
	case f.ref == "":
		return "", usageError(errors.New("--path needs --image, the image to copy it out of"))
	case f.path == "":
		return "", usageError(errors.New("--image needs --path, the absolute path of the file in the image"))
	case !path.IsAbs(f.path):
		return "", usageError(fmt.Errorf("--path %q: must be an absolute path in the image", f.path))
	}
	if _, err := image.Normalize(f.ref); err != nil {
		return "", usageError(fmt.Errorf("--image: %w", err))
	}
	p, err := image.ParsePullPolicy(f.policy)
	if err != nil {
		return "", usageError(fmt.Errorf("--policy: %w", err))
	}
	if err := checkAuthFile(f.authFile); err != nil {
		return "", imageError(err)
	}
	s, err := openImageStore(f.imageDir, image.Open)
	if err != nil {
		return "", err
	}
	self, err := os.Executable()
	if err != nil {
		return "", &exitError{code: exitFailed, err: err}
	}
	tmp, err := os.MkdirTemp("", "unitrun-inject-")
	if err != nil {
		return "", &exitError{code: exitFailed, err: err}
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, path.Base(f.path))
	out, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", &exitError{code: exitFailed, err: err}
	}
	mode, err := pullexec.ExtractFile(ctx, self, s.Dir(), f.ref, f.path, image.PullOptions{Policy: p, AuthFile: f.authFile}, out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(file, mode)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", usageError(fmt.Errorf("--path %s: the image %s has no such file", f.path, f.ref))
	case errors.Is(err, image.ErrNotFile):
		return "", usageError(fmt.Errorf("--path: %w", err))
	case err != nil:
		return "", imageError(err)
	}
	installed, err := inject.Install(ctx, dir, file)
	if err != nil {
		return "", injectError("--dir", err)
	}
	return installed, nil
}
