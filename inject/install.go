package inject

import (
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

// installedRE matches the names Install gives, tempRE those of its temp
// files.
var (
	installedRE = lazyregexp.New(`^[A-Za-z0-9_+][A-Za-z0-9._+-]*-[0-9a-f]{16}$`)
	tempRE      = lazyregexp.New(`^\.[A-Za-z0-9_+][A-Za-z0-9._+-]*-[0-9a-f]{16}\.tmp-[0-9a-f]{8}$`)
)

// Install copies the regular file src (symlinks to it are followed) into
// dir as "<base>-<hash>", where base is src's file name without a
// "-<hash>" suffix it may already carry and hash is the first 16 hex digits
// of the SHA-256 of its content, and returns the installed path. The file
// name of src must match [A-Za-z0-9_+][A-Za-z0-9._+-]*.
//
// dir is created with mode 0755 if it is missing (its parent must exist),
// once src is known to be a file Install can copy.
// Install refuses a dir that is a symlink, is not a directory, is owned by
// a user other than root and the caller, or is writable by group or
// others.
//
// If the target already is a regular file, mode 0755 (no setuid, setgid or
// sticky bit), owned by root or the caller, whose content has the same
// SHA-256, Install returns it without writing. Otherwise, whatever the
// target is (a corrupt copy, a file with another mode or owner, a symlink,
// which is never followed), Install replaces it atomically: it writes a temp
// file in dir (created with O_EXCL|O_NOFOLLOW), syncs it, sets mode 0755,
// renames it over the target, syncs dir and verifies the installed file's
// hash. Concurrent Installs of the same content, in one process or several,
// all return the same path to a complete file.
func Install(dir, src string) (string, error) {
	sum, err := hashFile(src)
	if err != nil {
		return "", fmt.Errorf("inject: %w", err)
	}
	base := strings.TrimSuffix(filepath.Base(src), "-"+sum[:hashLen])
	if !baseRE.MatchString(base) {
		return "", fmt.Errorf("inject: source %s: name %q must match %s", src, base, baseRE)
	}
	if err := ensureDir(dir); err != nil {
		return "", err
	}
	name := base + "-" + sum[:hashLen]
	path := filepath.Join(dir, name)
	switch ok, err := verify(path, sum); {
	case err != nil:
		return "", err
	case ok:
		return path, nil
	}
	if err := write(dir, name, src, sum); err != nil {
		return "", fmt.Errorf("inject: %w", err)
	}
	ok, err := verify(path, sum)
	if err == nil && !ok {
		err = fmt.Errorf("inject: %s does not verify after install", path)
	}
	if err != nil {
		return "", err
	}
	return path, nil
}

// Self installs the running executable into dir; see Install.
func Self(dir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("inject: %w", err)
	}
	return Install(dir, exe)
}

// ensureDir creates dir (mode 0755) if it is missing and checks it is a
// directory that only root or the caller may write.
func ensureDir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err == nil {
		if err := os.Chmod(dir, 0o755); err != nil {
			return fmt.Errorf("inject: %w", err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("inject: dir %s: %w", dir, reason(err))
	}
	return checkDir(dir)
}

// checkDir refuses a dir that is a symlink, is not a directory, is owned by
// someone other than root and the caller, or is writable by group or others.
func checkDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("inject: dir %s: %w", dir, reason(err))
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("inject: dir %s is a symlink", dir)
	case !fi.IsDir():
		return fmt.Errorf("inject: dir %s is not a directory", dir)
	case !ownedByUs(fi):
		return fmt.Errorf("inject: dir %s is owned by uid %d, neither root nor the caller", dir, owner(fi))
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("inject: dir %s is writable by group or others (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}

func owner(fi fs.FileInfo) uint32 { return fi.Sys().(*syscall.Stat_t).Uid }

func ownedByUs(fi fs.FileInfo) bool {
	uid := owner(fi)
	return uid == 0 || int(uid) == os.Geteuid()
}

// hashFile returns the hex SHA-256 of the regular file at path.
func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("source %s: %w", path, reason(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("source %s: %w", path, reason(err))
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("source %s is not a regular file", path)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
// regular file, mode 0755 with no setuid, setgid or sticky bit, owned by
// root or the caller. A missing file or a
// symlink (never followed) is not one. O_NONBLOCK keeps a FIFO planted at
// path from blocking the open.
func verify(path, sum string) (bool, error) {
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
	// Mode 0755 exactly: a regular file without setuid, setgid or sticky bit.
	if fi.Mode() != 0o755 || !ownedByUs(fi) {
		return false, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, fmt.Errorf("inject: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)) == sum, nil
}

// write copies src to a temp file in dir, checks the copy's hash, and
// renames it to name.
func write(dir, name, src, sum string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("source %s: %w", src, reason(err))
	}
	defer in.Close()
	var rnd [4]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+name+".tmp-"+hex.EncodeToString(rnd[:]))
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("dir %s: a file cannot be created in it: %w", dir, reason(err))
	}
	err = copyAndCheck(out, in, sum)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		// A read of src or a write of the temp file, whose name is ours.
		err = fmt.Errorf("source %s: %w", src, pe.Err)
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

// copyAndCheck copies in to out, checking the content's hash, then makes
// out executable and durable.
func copyAndCheck(out, in *os.File, sum string) error {
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("source %s changed while being copied", in.Name())
	}
	if err := out.Chmod(0o755); err != nil {
		return err
	}
	return out.Sync()
}
