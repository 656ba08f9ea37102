package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/internal/pathtrust"
)

// The config is the root of trust: whoever may write a config file, or
// change which file a config path names, chooses what the daemon runs as
// root. So every file and directory the daemon reads its config from is
// judged by package pathtrust: the file itself, as opened, and every
// directory and symlink on the way to it.

// resolveConfigPath returns the path that path names with no symlink in
// it, as pathtrust.Resolve does, with a rule it breaks as an *Error.
func resolveConfigPath(path string) (string, error) {
	real, err := pathtrust.Resolve(path)
	var te *pathtrust.Error
	if errors.As(err, &te) {
		return "", &Error{File: te.Path, Rule: te.Rule}
	}
	return real, err
}

// readConfigFile reads the config file at path: a regular file named
// *.toml (after symlinks), reached as resolveConfigPath allows, opened
// once and judged as opened by pathtrust.Rule, so that no file can be put in
// its place between the judgment and the read. A FIFO or device is
// refused without being read.
func readConfigFile(path string) ([]byte, error) {
	real, err := resolveConfigPath(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(real, ".toml") {
		return nil, &Error{File: path, Rule: fmt.Sprintf("names %s, which is not a *.toml file", real)}
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		return nil, syscall.EISDIR
	default:
		return nil, &Error{File: path, Rule: "not a regular file"}
	}
	if rule := pathtrust.Rule(&st); rule != "" {
		return nil, &Error{File: path, Rule: rule}
	}
	return io.ReadAll(f)
}

// configReadError returns err, from reading the config file or ops dir at
// path, as the *Error it is or one saying path cannot be read.
func configReadError(path string, err error) *Error {
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &Error{File: path, Rule: "cannot read: " + err.Error()}
}
