// Package pathtrust judges the files and directories a root daemon trusts
// (its config, its state directory) as sshd's StrictModes judges a user's
// files: whoever may write one of them, or change which file a path
// names, chooses what the daemon runs, so each must be owned by root or
// the daemon's uid and not be writable by group or others, and so must
// every directory and symlink on the way to it.
package pathtrust

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinks bounds the symlinks followed to reach a path, as the kernel's
// ELOOP does.
const maxLinks = 40

// An Error is a path that someone other than root and the daemon's uid
// may change.
type Error struct {
	Path string // the path as given
	Rule string // what is wrong, naming the directory or link at fault when it is not Path
}

func (e *Error) Error() string { return e.Path + ": " + e.Rule }

// Rule returns the rule that a file or directory with stat st breaks, or
// "": it must be owned by root or the daemon's uid and not be writable by
// group or others. A directory that others may write is allowed only when
// it is root's and sticky (as /tmp is): others may add entries there but
// not rename or remove root's.
func Rule(st *unix.Stat_t) string {
	mode := fs.FileMode(st.Mode & 0o777)
	switch {
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("owned by uid %d, neither root nor the daemon's uid: its owner chooses what the daemon runs", st.Uid)
	case st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0 && st.Uid == 0:
		return ""
	case mode&0o022 != 0:
		return fmt.Sprintf("writable by group or others (mode %#o): whoever may write it chooses what the daemon runs", mode)
	}
	return ""
}

// Resolve follows path as the kernel would, one element at a time, and
// returns the path it names with no symlink in it. Every directory passed
// through (each one that holds an element of path or of a symlink's
// target, and path itself when it is a directory) must pass Rule, and
// every symlink followed must be owned by root or the daemon's uid; else
// the error is an *Error naming path and the directory or link at fault.
// An element that does not exist is an error wrapping fs.ErrNotExist.
func Resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	bad := func(where, rule string) error {
		if where != path && where != abs {
			rule = fmt.Sprintf("reached through %s, %s", where, rule)
		}
		return &Error{Path: path, Rule: rule}
	}
	check := func(dir string) error {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return &fs.PathError{Op: "stat", Path: dir, Err: err}
		}
		if rule := Rule(&st); rule != "" {
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
			if links++; links > maxLinks {
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
