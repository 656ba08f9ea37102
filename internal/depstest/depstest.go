// Package depstest tells tests which packages a package links, to hold
// the small programs and the packages every unitrun process links to the
// imports they may have.
package depstest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A Dep is a package that another links.
type Dep struct {
	Path     string // its import path
	Standard bool   // of the standard library
}

// Deps returns the packages that the package in dir links (itself
// included), built as a release builds it (CGO_ENABLED=0), but the
// standard library's internal ones, which come with the others.
func Deps(t testing.TB, dir string) []Dep {
	t.Helper()
	list := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".")
	list.Dir = dir
	list.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var deps []Dep
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, std, _ := strings.Cut(line, " ")
		d := Dep{Path: path, Standard: std == "true"}
		if d.Standard && (strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") || strings.HasPrefix(path, "vendor/")) {
			continue
		}
		deps = append(deps, d)
	}
	return deps
}
