package hostapi

import (
	"fmt"
	"os"
	"syscall"
)

// checkConfigOwner returns the rule that the config file or ops dir at path
// breaks, or "": whoever may write it chooses what the daemon runs, so it
// must be owned by root or the daemon's uid and not be writable by group
// or others. A symlink is judged by its target.
func checkConfigOwner(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	uid := fi.Sys().(*syscall.Stat_t).Uid
	switch {
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Sprintf("writable by group or others (mode %v): whoever may write it chooses what the daemon runs", fi.Mode().Perm())
	case uid != 0 && int(uid) != os.Geteuid():
		return fmt.Sprintf("owned by uid %d, neither root nor the daemon's uid: its owner chooses what the daemon runs", uid)
	}
	return ""
}
