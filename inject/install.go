package inject

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/unitrun/unitrun/internal/atomicfile"
	"github.com/unitrun/unitrun/internal/lazyregexp"
)

// DefaultDir is where binaries are installed unless told otherwise.
const DefaultDir = "/run/bin"

// hashLen is the number of hex digits of the SHA-256 in an installed name.
const hashLen = 16

// baseRE is the form of a source file's name, and so of the first part of
// an installed name.
var baseRE = lazyregexp.New(`^[A-Za-z0-9_+][A-Za-z0-9._+-]*$`)

// installedRE matches the names Install gives, companionRE those Self
// gives a companion (an installed name, submatch 1, plus "-WORD"), tempRE
// those of their temp files.
var (
	installedRE = lazyregexp.New(`^[A-Za-z0-9_+][A-Za-z0-9._+-]*-[0-9a-f]{16}$`)
	companionRE = lazyregexp.New(`^([A-Za-z0-9_+][A-Za-z0-9._+-]*-[0-9a-f]{16})-[a-z]+$`)
	tempRE      = lazyregexp.New(`^\.[A-Za-z0-9_+][A-Za-z0-9._+-]*-[0-9a-f]{16}(-[a-z]+)?\.tmp-[0-9a-f]{8}$`)
)

// A RefusedError is Install's or GC's refusal of the source or the dir it
// was given for what that path is, rather than a failure to read or write
// it: a dir that is not an absolute path, does not exist (for Install: its
// parent), is a symlink, is not a directory, or is owned or writable by
// others; a source that does not exist, is not a regular file, or whose
// name Install cannot give a copy.
type RefusedError struct {
	Dir  bool   // the dir was refused, else the source
	Path string // as given
	Err  error  // why
}

func (e *RefusedError) Error() string {
	what := "source"
	if e.Dir {
		what = "dir"
	}
	return "inject: " + what + " " + e.Path + ": " + e.Err.Error()
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refusedDir and refusedSource return a *RefusedError of dir or src.
func refusedDir(dir string, err error) error    { return &RefusedError{Dir: true, Path: dir, Err: err} }
func refusedSource(src string, err error) error { return &RefusedError{Path: src, Err: err} }

// checkAbs refuses a dir that is not an absolute path: a unit's ExecStart=
// runs an absolute path, so a copy under a relative one is of no use to a
// unit, and GC would never find it in use.
func checkAbs(dir string) error {
	if !filepath.IsAbs(dir) {
		return refusedDir(dir, errors.New("must be an absolute path"))
	}
	return nil
}

// CheckDir returns the *RefusedError of a dir that GC refuses: one that
// is not an absolute path, is missing, is a symlink, is not a directory,
// or is owned or writable by others; nil for one it takes.
func CheckDir(dir string) error {
	if err := checkAbs(dir); err != nil {
		return err
	}
	return checkDir(dir)
}

// Install copies the regular file src (symlinks to it are followed) into
// dir as "<base>-<hash>", where base is src's file name without a
// "-<hash>" suffix it may already carry and hash is the first 16 hex digits
// of the SHA-256 of its content, and returns the installed path. The file
// name of src must match [A-Za-z0-9_+][A-Za-z0-9._+-]*. src is opened
// without blocking and checked on the open file: anything but a regular
// file (a FIFO, a device, a directory) is refused, and src is read through
// that one open file only.
//
// The copy's mode is 0700 plus, for group and for others, r-x where src
// grants that class read ([InstallMode]): a copy of a file that only root
// may read is only root's to read, as src was.
//
// dir must be an absolute path. It is created with mode 0755 if it is
// missing (its parent must exist), once src is known to be a file Install
// can copy. Install refuses a dir that is a symlink, is not a directory, is owned by
// a user other than root and the caller, or is writable by group or
// others.
//
// If the target already is a regular file of that mode (no setuid, setgid
// or sticky bit), owned by root or the caller, whose content has the same
// SHA-256, Install returns it without writing. Otherwise, whatever the
// target is (a corrupt copy, a file with another mode or owner, a symlink,
// which is never followed), Install replaces it atomically: it writes a temp
// file in dir (created with O_EXCL|O_NOFOLLOW), syncs it, sets its mode,
// renames it over the target, syncs dir and verifies the installed file's
// hash. Concurrent Installs of the same content, in one process or several,
// all return the same path to a complete file. Once ctx is done, Install
// stops reading or copying and returns ctx's error, leaving no temp file.
// A source or dir refused for what it is is a *RefusedError.
func Install(ctx context.Context, dir, src string) (string, error) {
	if err := checkAbs(dir); err != nil {
		return "", err
	}
	in, err := openSource(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return "", fmt.Errorf("inject: source %s: %w", src, reason(err))
	}
	sum, err := hashOf(ctx, in)
	if err != nil {
		return "", fmt.Errorf("inject: source %s: %w", src, err)
	}
	base := strings.TrimSuffix(filepath.Base(src), "-"+sum[:hashLen])
	if !baseRE.MatchString(base) {
		return "", refusedSource(src, fmt.Errorf("name %q must match %s", base, baseRE))
	}
	if err := ensureDir(dir); err != nil {
		return "", err
	}
	name := base + "-" + sum[:hashLen]
	if err := put(ctx, dir, name, in, sum, InstallMode(fi.Mode())); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// put makes dir/name a copy of in, whose SHA-256 is sum, of mode mode:
// it keeps a verified copy already there, else writes one and verifies it.
func put(ctx context.Context, dir, name string, in *os.File, sum string, mode fs.FileMode) error {
	path := filepath.Join(dir, name)
	switch ok, err := verify(ctx, path, sum, mode); {
	case err != nil:
		return err
	case ok:
		return nil
	}
	if err := write(ctx, dir, name, in, sum, mode); err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	ok, err := verify(ctx, path, sum, mode)
	if err == nil && !ok {
		err = fmt.Errorf("inject: %s does not verify after install", path)
	}
	return err
}

// InstallMode is the mode of the copy of a file of mode src: rwx for its
// owner and, for group and for others, r-x if src grants that class read,
// else nothing.
func InstallMode(src fs.FileMode) fs.FileMode {
	mode := fs.FileMode(0o700)
	if src&0o040 != 0 {
		mode |= 0o050
	}
	if src&0o004 != 0 {
		mode |= 0o005
	}
	return mode
}

// openSource opens src for reading without blocking (a FIFO would block
// an open for reading until a writer came) and returns it if it is a
// regular file; a missing src, or one that is not a regular file, is a
// *RefusedError.
func openSource(src string) (*os.File, error) {
	f, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil, refusedSource(src, reason(err))
	case err != nil:
		return nil, fmt.Errorf("inject: source %s: %w", src, reason(err))
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("inject: source %s: %w", src, reason(err))
	case !fi.Mode().IsRegular():
		err = refusedSource(src, fmt.Errorf("not a regular file (it is %s)", kind(fi.Mode())))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// kind names the type of a file that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a file"
}

// Self installs the running executable into dir (see Install) and
// returns the installed path. Each of companions names a file that goes
// with a binary at a path (pod.HookPath names unitrun's exit hook, and
// pullexec.Path its registry client): the path plus "-WORD". Where the
// executable has a file there, Self installs it at companion(installed
// path) as Install installs a file (verified, atomic, mode InstallMode),
// after the binary, so that the copy finds its companions as the
// executable does. Their names carry the hash of the binary they go with,
// the build all come from; GC keeps them all while a unit runs any and
// removes them together.
func Self(ctx context.Context, dir string, companions ...func(path string) string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("inject: %w", err)
	}
	path, err := Install(ctx, dir, exe)
	if err != nil {
		return "", err
	}
	for _, companion := range companions {
		if err := installCompanion(ctx, companion(exe), companion(path)); err != nil {
			return "", err
		}
	}
	return path, nil
}

// installCompanion copies src, if it exists, to target, a companion's
// path (companionRE).
func installCompanion(ctx context.Context, src, target string) error {
	dir, name := filepath.Split(target)
	if !companionRE.MatchString(name) {
		return fmt.Errorf("inject: %s is not named as a companion of an installed file (NAME-HASH-WORD)", target)
	}
	in, err := openSource(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inject: %w", err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("inject: source %s: %w", src, reason(err))
	}
	sum, err := hashOf(ctx, in)
	if err != nil {
		return fmt.Errorf("inject: source %s: %w", src, err)
	}
	return put(ctx, filepath.Clean(dir), name, in, sum, InstallMode(fi.Mode()))
}

// ensureDir creates dir (mode 0755) if it is missing and checks it is a
// directory that only root or the caller may write.
func ensureDir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err == nil {
		if err := os.Chmod(dir, 0o755); err != nil {
			return fmt.Errorf("inject: %w", err)
		}
	} else if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return refusedDir(dir, reason(err))
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("inject: dir %s: %w", dir, reason(err))
	}
	return checkDir(dir)
}

// checkDir refuses a dir that is missing, is a symlink, is not a
// directory, is owned by someone other than root and the caller, or is
// writable by group or others (a *RefusedError).
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return refusedDir(dir, reason(err))
	case err != nil:
		return fmt.Errorf("inject: dir %s: %w", dir, reason(err))
	case fi.Mode()&fs.ModeSymlink != 0:
		return refusedDir(dir, errors.New("is a symlink"))
	case !fi.IsDir():
		return refusedDir(dir, errors.New("not a directory"))
	case !ownedByUs(fi):
		return refusedDir(dir, fmt.Errorf("owned by uid %d, neither root nor the caller", owner(fi)))
	case fi.Mode().Perm()&0o022 != 0:
		return refusedDir(dir, fmt.Errorf("writable by group or others (mode %#o)", fi.Mode().Perm()))
	}
	return nil
}

func owner(fi fs.FileInfo) uint32 { return fi.Sys().(*syscall.Stat_t).Uid }

func ownedByUs(fi fs.FileInfo) bool {
	uid := owner(fi)
	return uid == 0 || int(uid) == os.Geteuid()
}

// hashOf returns the hex SHA-256 of what f holds, read from its start.
func hashOf(ctx context.Context, f *os.File) (string, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", reason(err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader reads r until ctx is done, then returns ctx's error.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// reason is err without the operation and path of an *fs.PathError
// ("open /x: no such file or directory" becomes "no such file or
// directory"), for a message that names the path in its own words.
func reason(err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// verify reports whether path is an installed copy with the given hash: a
// regular file of mode exactly mode (so with no setuid, setgid or sticky
// bit), owned by root or the caller. A missing file or a
// symlink (never followed) is not one. O_NONBLOCK keeps a FIFO planted at
// path from blocking the open.
func verify(ctx context.Context, path, sum string, mode fs.FileMode) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inject: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("inject: %w", err)
	}
	if fi.Mode() != mode || !ownedByUs(fi) {
		return false, nil
	}
	got, err := hashOf(ctx, f)
	if err != nil {
		return false, fmt.Errorf("inject: %s: %w", path, err)
	}
	return got == sum, nil
}

// write copies in, from its start, to a temp file of mode mode in dir,
// checks the copy's hash, and renames it to name.
func write(ctx context.Context, dir, name string, in *os.File, sum string, mode fs.FileMode) error {
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+name+".tmp-"+hex.EncodeToString(rnd[:]))
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("dir %s: a file cannot be created in it: %w", dir, reason(err))
	}
	err = copyAndCheck(ctx, out, in, sum, mode)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		// A read of the source or a write of the temp file, whose name is ours.
		err = fmt.Errorf("source %s: %w", in.Name(), pe.Err)
		if pe.Path == tmp {
			err = fmt.Errorf("dir %s: the copy cannot be written: %w", dir, pe.Err)
		}
	}
	if err == nil {
		if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			err = fmt.Errorf("dir %s: %s cannot be put in place: %w", dir, name, reason(err))
		}
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return atomicfile.SyncDir(dir)
}

// copyAndCheck copies in to out, checking the content's hash, then gives
// out mode mode and makes it durable.
func copyAndCheck(ctx context.Context, out, in *os.File, sum string, mode fs.FileMode) error {
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), ctxReader{ctx, in}); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("source %s changed while being copied", in.Name())
	}
	if err := out.Chmod(mode); err != nil {
		return err
	}
	return out.Sync()
}
