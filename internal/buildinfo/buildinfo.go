// Package buildinfo says which build of a unitrun command is running: its
// version, the commit it was built from and the Go version, as the Go
// toolchain records them in every binary it builds (runtime/debug).
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info is what a binary knows of its own build. It is the --json form of
// "unitrun version".
type Info struct {
	// Version is the main module's version: a tag, a pseudo-version
	// such as v0.0.0-20261207010203-0123456789ab, or "(devel)".
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, or
	// UnknownCommit when the build did not record one (a build outside a
	// checkout, in a git worktree, or with -buildvcs=false).
	Commit string `json:"commit"`
	// Modified is true when the checkout had changes not committed.
	Modified bool `json:"modified"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"go_version"`
}

// UnknownCommit is the Commit of a build that recorded none, in the text
// and the JSON form alike.
const UnknownCommit = "unknown"

// Read returns the running binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return From(bi)
}

// From returns the Info in bi, which is nil for a binary built without
// module support; debug/buildinfo.ReadFile reads it from another binary.
func From(bi *debug.BuildInfo) Info {
	i := Info{Version: "(devel)", Commit: UnknownCommit, GoVersion: runtime.Version()}
	if bi == nil {
		return i
	}
	i.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		i.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is what --version prints after the program's name: the
// version, "commit" and the commit (followed by " (modified)" for a
// checkout with changes), and the Go version, as in
// "(devel) commit 5d0c… (modified) go1.26.8".
func (i Info) String() string {
	commit := i.Commit
	if i.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("%s commit %s %s", i.Version, commit, i.GoVersion)
}
