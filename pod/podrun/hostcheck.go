package podrun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/appexec"
)

// ParseForHost is [pod.ParseWith] with [checkHost]: what a create
// checks before it creates anything (and pod install before it installs).
func ParseForHost(data []byte, iso pod.Isolation) (*pod.Manifest, error) {
	return pod.ParseWith(data, iso, checkHost)
}

// checkHost checks, on this host, what an app's run would otherwise find
// out only when it starts ([ExecApp]): that each app's rootfs is a
// directory other than / (checkRootfs), that each app's user and group
// resolve (on the host, also for an app with a rootfs, as ExecApp resolves
// them) and that its workingDir is a directory, inside its rootfs for an
// app with one. A directory that a symlink inside the rootfs leads to is
// taken on trust: it resolves only once the app has entered its rootfs.
// An app with an image is left alone: its names resolve in the image's
// own files, and its workingDir is in the image, once it is pulled
// ([pod.Manifest.ApplyImage]).
// It is a [pod.HostCheck]; refused may be nil, for none. Each error names
// the field.
func checkHost(m *pod.Manifest, refused func(field string) bool) []error {
	return checkHostDirs(m, refused, false)
}

// checkHostDirs is [checkHost], which, if missingDirs, takes a workingDir
// that does not exist for one that will be made.
func checkHostDirs(m *pod.Manifest, refused func(field string) bool, missingDirs bool) []error {
	if refused == nil {
		refused = func(string) bool { return false }
	}
	var p []error
	add := func(path, value, rule string) {
		p = append(p, &pod.FieldError{Path: path, Value: value, Rule: rule})
	}
	for i := range m.Apps {
		a := &m.Apps[i]
		if a.Image != "" {
			continue
		}
		path := fmt.Sprintf("apps[%d]", i)
		rootOK := a.Rootfs == "" || !refused(path+".rootfs")
		if a.Rootfs != "" && rootOK {
			if err := appexec.CheckRootfs(a.Rootfs); err != nil {
				add(path+".rootfs", a.Rootfs, err.Error())
				rootOK = false
			}
		}
		if a.User != "" && !refused(path+".user") {
			if _, err := appexec.LookupUser(a.User); err != nil {
				add(path+".user", a.User, "no such user on this host")
			}
		}
		if a.Group != "" && !refused(path+".group") {
			if _, err := appexec.LookupGroup(a.Group); err != nil {
				add(path+".group", a.Group, "no such group on this host")
			}
		}
		if a.WorkingDir != "" && rootOK && !refused(path+".workingDir") {
			if rule, missing := checkDir(a); rule != "" && !(missing && missingDirs) {
				add(path+".workingDir", a.WorkingDir, rule)
			}
		}
	}
	return p
}

// checkDir says what is wrong with a's workingDir, and whether it is
// that it does not exist, or "" if nothing is, or if it cannot tell.
func checkDir(a *pod.App) (rule string, missing bool) {
	var fi fs.FileInfo
	var err error
	if a.Rootfs == "" {
		fi, err = os.Stat(a.WorkingDir)
	} else {
		root, rerr := os.OpenRoot(a.Rootfs)
		if rerr != nil {
			return "", false
		}
		defer root.Close()
		fi, err = root.Stat(inRoot(a.WorkingDir))
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if a.Rootfs != "" {
			return "no such directory in rootfs " + a.Rootfs, true
		}
		return "no such directory", true
	case err == nil && !fi.IsDir():
		return "not a directory", false
	}
	return "", false
}

// Check returns what [Runner.Create] would refuse of manifest, an
// *InvalidError, or nil, and creates nothing: a node that must say why
// it cannot run a pod asks this before it asks for the pod.
func Check(manifest []byte) error {
	if _, err := ParseForHost(manifest, ""); err != nil {
		return &InvalidError{Err: err}
	}
	return nil
}

// CheckMakingDirs is [Check] for a manifest whose apps' workingDirs are
// made where they do not exist, as a container runtime makes a
// container's: once nothing is refused, it makes each missing one (mode
// 0755, root's, with its parents), inside the app's rootfs for an app
// with one. A directory it cannot make is an *InvalidError naming the
// field.
func CheckMakingDirs(manifest []byte) error {
	m, err := pod.ParseWith(manifest, "", func(m *pod.Manifest, refused func(string) bool) []error {
		return checkHostDirs(m, refused, true)
	})
	if err != nil {
		return &InvalidError{Err: err}
	}
	var errs []error
	for i := range m.Apps {
		a := &m.Apps[i]
		if a.WorkingDir == "" {
			continue
		}
		if _, missing := checkDir(a); !missing {
			continue
		}
		if err := makeDir(a.Rootfs, a.WorkingDir); err != nil {
			errs = append(errs, &pod.FieldError{Path: fmt.Sprintf("apps[%d].workingDir", i), Value: a.WorkingDir, Rule: "cannot be made: " + appexec.UnwrapPath(err).Error()})
		}
	}
	if len(errs) > 0 {
		return &InvalidError{Err: errors.Join(errs...)}
	}
	return nil
}

// makeDir makes directory dir and its parents, in rootfs unless it is "".
func makeDir(rootfs, dir string) error {
	if rootfs == "" {
		return os.MkdirAll(dir, 0o755)
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.MkdirAll(inRoot(dir), 0o755)
}

// inRoot is absolute path p as an [os.Root] takes it: relative to the
// root.
func inRoot(p string) string {
	if p = strings.TrimLeft(p, "/"); p == "" {
		return "."
	}
	return p
}
