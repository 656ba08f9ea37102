package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxConfigLinks bounds the symlinks followed to reach a config file, as
// the kernel's ELOOP does.
const maxConfigLinks = 40

// The config is the root of trust: whoever may write a config file, or
// change which file a config path names, chooses what the daemon runs as
// root. So every file and directory the daemon reads its config from is
// judged as sshd's StrictModes judges a user's files: the file itself,
// as opened, and every directory and symlink on the way to it.

// ownerRule returns the rule that a file or directory with stat st breaks
// as part of the config, or "": it must be owned by root or the daemon's
// uid and not be writable by group or others. A directory that others may
// write is allowed only when it is root's and sticky (as /tmp is): others
// may add entries there but not rename or remove root's.
func ownerRule(st *unix.Stat_t) string {
	mode := fs.FileMode(st.Mode & 0o777)
	switch {
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("owned by uid %d, neither root nor the daemon's uid: its owner chooses what the daemon runs", st.Uid)
	case st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0 && st.Uid == 0:
		return ""
	case mode&0o022 != 0:
		return fmt.Sprintf("writable by group or others (mode %v): whoever may write it chooses what the daemon runs", mode)
	}
	return ""
}

// resolveConfigPath follows path as the kernel would, one element at a
// time, and returns the path it names with no symlink in it. Every
// directory passed through (each one that holds an element of path or of
// a symlink's target) must pass ownerRule, and every symlink followed must
// be owned by root or the daemon's uid; else the error is an *Error
// naming path and the directory or link at fault. An element that does not
// exist is an error wrapping fs.ErrNotExist.
func resolveConfigPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	bad := func(where, rule string) error {
		if where != path {
			rule = fmt.Sprintf("reached through %s, %s", where, rule)
		}
		return &Error{File: path, Rule: rule}
	}
	check := func(dir string) error {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return &fs.PathError{Op: "stat", Path: dir, Err: err}
		}
		if rule := ownerRule(&st); rule != "" {
			return bad(dir, "a directory "+rule)
		}
		return nil
	}
	cur := "/"
	if err := check(cur); err != nil {
		return "", err
	}
	todo := strings.Split(abs, "/")
	for links := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			return "", &fs.PathError{Op: "lstat", Path: next, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if links++; links > maxConfigLinks {
				return "", bad(path, "more than 40 symlinks to follow")
			}
			if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
				return "", bad(next, fmt.Sprintf("a symlink owned by uid %d, neither root nor the daemon's uid: its owner chooses what the daemon runs", st.Uid))
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			todo = append(strings.Split(target, "/"), todo...)
		case unix.S_IFDIR:
			if err := check(next); err != nil {
				return "", err
			}
			cur = next
		default:
			cur = next
		}
	}
	return cur, nil
}

// readConfigFile reads the config file at path: a regular file named
// *.toml (after symlinks), reached as resolveConfigPath allows, opened
// once and judged as opened by ownerRule, so that no file can be put in
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
	if rule := ownerRule(&st); rule != "" {
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
