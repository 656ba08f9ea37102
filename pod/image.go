package pod

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/record"
)

// ImageFiles are the files of an image that resolve its users: the
// content of its /etc/passwd and /etc/group, nil where it has none.
type ImageFiles struct {
	Passwd, Group []byte
}

// ImageRootDir is the directory of pod name's app whose root is an
// image, in the pod's state: Root, where the pod's container (in a host
// pod, the app's service) mounts the image's layers (overlayfs), with
// Upper, the app's writable layer, and Work, overlayfs's work directory.
// All three go with the pod.
type ImageRootDir string

// ImageRoot is app's ImageRootDir in pod name's state under stateDir.
func ImageRoot(stateDir, name, app string) ImageRootDir {
	return ImageRootDir(filepath.Join(record.Dir(stateDir, name), "roots", app))
}

// Root is where the image's layers are mounted: the app's rootfs.
func (d ImageRootDir) Root() string { return filepath.Join(string(d), "root") }

// Upper is the app's writable layer.
func (d ImageRootDir) Upper() string { return filepath.Join(string(d), "upper") }

// Work is overlayfs's work directory of Upper.
func (d ImageRootDir) Work() string { return filepath.Join(string(d), "work") }

// HostImageRoot reports whether app a of m has an image root that its
// own service mounts (the mount-root hook), in the manager's mount
// namespace: a's of a host pod. An isolated pod's container mounts its
// apps' roots in the pod's own mount namespace.
func (m *Manifest) HostImageRoot(a *App) bool {
	return a.ImageID != "" && m.Isolation != Namespaces
}

// Merged is what an app runs from its image: MergeImage's result.
type Merged struct {
	Exec       []string
	Env        map[string]string
	WorkingDir string
	Identity   appexec.Identity
}

// MergeImage applies an image's config to app a as Kubernetes and
// container runtimes apply it, a's own settings winning:
//
//   - the command: a's Exec (Kubernetes' command) and Args: neither set,
//     the image's Entrypoint then Cmd; Exec alone, Exec (the image's
//     Entrypoint and Cmd are ignored); Args alone, the Entrypoint then
//     Args; both, Exec then Args;
//   - Env: the image's variables, then a's, which win;
//   - WorkingDir: a's, else the image's, else /;
//   - the user: a's User, else the image's (its User before a ":"), and
//     the group: a's Group, else the part of the image's User after a
//     ":" if a sets no User, else the user's primary group in the image's
//     /etc/passwd, else 0; names resolve in the image's /etc/passwd and
//     /etc/group (files), never the host's, numbers are taken as they
//     are; the supplementary groups are those that the image's
//     /etc/group lists the user's name in, HOME the user's home in its
//     /etc/passwd, else /;
//   - a's RunAsNonRoot refuses a user that resolves to root, and an
//     image's User that is a name (a's User unset), as the kubelet does.
//
// Each error names a's field (under path, "apps[0]") or the image's.
func MergeImage(path string, a *App, cfg image.Config, files ImageFiles) (*Merged, error) {
	var errs []error
	m := &Merged{WorkingDir: a.WorkingDir, Env: map[string]string{}}
	switch {
	case len(a.Exec) > 0:
		m.Exec = append(slices.Clone(a.Exec), a.Args...)
	case len(a.Args) > 0:
		m.Exec = append(slices.Clone(cfg.Entrypoint), a.Args...)
	default:
		m.Exec = append(slices.Clone(cfg.Entrypoint), cfg.Cmd...)
	}
	if len(m.Exec) == 0 {
		errs = append(errs, &FieldError{Path: path + ".exec", Rule: fmt.Sprintf("required: image %s has neither Entrypoint nor Cmd", a.Image)})
	}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		m.Env[k] = v
	}
	maps.Copy(m.Env, a.Env)
	if m.WorkingDir == "" {
		m.WorkingDir = cfg.WorkingDir
	}
	if m.WorkingDir == "" {
		m.WorkingDir = "/"
	}
	usr, grp := a.User, a.Group
	userField, groupField := path+".user", path+".group"
	if usr == "" {
		u, g, _ := strings.Cut(cfg.User, ":")
		usr, userField = u, "image "+a.Image+": its config's User"
		if grp == "" {
			grp, groupField = g, userField
		}
	}
	id, uerr, gerr := resolveUser(usr, grp, files)
	if uerr != nil {
		errs = append(errs, &FieldError{Path: userField, Value: usr, Rule: uerr.Error()})
	}
	if gerr != nil {
		errs = append(errs, &FieldError{Path: groupField, Value: grp, Rule: gerr.Error()})
	}
	if uerr == nil && a.RunAsNonRoot {
		if err := checkNonRoot(path, a, cfg, id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m.Identity = id
	return m, nil
}

// checkNonRoot refuses, as the kubelet refuses a container with
// runAsNonRoot, app a of an image of config cfg that runs as root (id is
// its user as resolved), or whose user, the image's, is not a number the
// kubelet could check.
func checkNonRoot(path string, a *App, cfg image.Config, id appexec.Identity) error {
	field := &FieldError{Path: path + ".runAsNonRoot"}
	u, _, _ := strings.Cut(cfg.User, ":")
	switch {
	case a.User != "" && id.UID == 0:
		field.Rule = fmt.Sprintf("true, but its user %q is root", a.User)
	case a.User != "":
		return nil
	case !appexec.NumericID(u) && u != "":
		field.Rule = fmt.Sprintf("true, but image %s's config's User %q is a name, not a number: it cannot be verified to be other than root", a.Image, cfg.User)
	case id.UID == 0:
		field.Rule = fmt.Sprintf("true, but image %s runs as root (its config's User is %q)", a.Image, cfg.User)
	default:
		return nil
	}
	return field
}

// resolveUser resolves user (root if "") and group (the user's primary
// one if "") in an image's files.
func resolveUser(usr, grp string, files ImageFiles) (id appexec.Identity, userErr, groupErr error) {
	id.Home = "/"
	name := ""
	if usr == "" {
		usr = "0"
	}
	pw := parseEntries(files.Passwd, 7)
	entry := func(match func(e []string) bool) []string {
		for _, e := range pw {
			if match(e) {
				return e
			}
		}
		return nil
	}
	var e []string
	if appexec.NumericID(usr) {
		n, _ := strconv.ParseUint(usr, 10, 32)
		id.UID = uint32(n)
		e = entry(func(e []string) bool { return e[2] == usr })
	} else if e = entry(func(e []string) bool { return e[0] == usr }); e == nil {
		return id, errors.New("no such user in the image's /etc/passwd"), nil
	}
	if e != nil {
		uid, err1 := strconv.ParseUint(e[2], 10, 32)
		gid, err2 := strconv.ParseUint(e[3], 10, 32)
		if err1 != nil || err2 != nil {
			return id, errors.New("the image's /etc/passwd has no numeric ids for it"), nil
		}
		name, id.UID, id.GID = e[0], uint32(uid), uint32(gid)
		if e[5] != "" {
			id.Home = e[5]
		}
	}
	groups := parseEntries(files.Group, 4)
	if grp != "" {
		if appexec.NumericID(grp) {
			n, _ := strconv.ParseUint(grp, 10, 32)
			id.GID = uint32(n)
		} else {
			i := slices.IndexFunc(groups, func(g []string) bool { return g[0] == grp })
			n, err := uint64(0), error(nil)
			if i >= 0 {
				n, err = strconv.ParseUint(groups[i][2], 10, 32)
			}
			if i < 0 || err != nil {
				return id, nil, errors.New("no such group in the image's /etc/group")
			}
			id.GID = uint32(n)
		}
	}
	if name != "" {
		for _, g := range groups {
			gid, err := strconv.ParseUint(g[2], 10, 32)
			if err == nil && slices.Contains(strings.Split(g[3], ","), name) && !slices.Contains(id.Groups, uint32(gid)) {
				id.Groups = append(id.Groups, uint32(gid))
			}
		}
	}
	return id, nil, nil
}

// parseEntries returns the lines of a passwd or group file of n fields
// each, split at ':', leaving out comments and lines of another shape.
func parseEntries(data []byte, n int) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if f := strings.Split(line, ":"); len(f) == n {
			out = append(out, f)
		}
	}
	return out
}

// ApplyImage sets app i of m, whose Image is img, to run from it, once
// its creation in stateDir has pulled it into the store in dir: its
// command, environment, working directory and identity merged
// ([MergeImage]), its ImageID, and its Rootfs the Root of its
// [ImageRoot]. m must be valid; the merged fields are validated again,
// as a manifest's own.
func (m *Manifest) ApplyImage(stateDir, dir string, i int, img *image.Image, files ImageFiles) error {
	a := &m.Apps[i]
	path := fmt.Sprintf("apps[%d]", i)
	mg, err := MergeImage(path, a, img.Config, files)
	if err != nil {
		return err
	}
	a.Exec, a.Args, a.Env, a.WorkingDir = mg.Exec, nil, mg.Env, mg.WorkingDir
	a.User, a.Group = strconv.FormatUint(uint64(mg.Identity.UID), 10), strconv.FormatUint(uint64(mg.Identity.GID), 10)
	a.Identity, a.ImageID = &mg.Identity, img.ID
	a.Rootfs = ImageRoot(stateDir, m.Name, a.Name).Root()
	m.ImageDir = dir
	var p problems
	p.app(path, a, m)
	return errors.Join(p...)
}

// PullPolicy is a's imagePullPolicy, else Kubernetes' default: Always
// for an image tagged latest or not tagged at all, else IfNotPresent.
func (a *App) PullPolicy() image.PullPolicy {
	if a.ImagePullPolicy != "" {
		return image.PullPolicy(a.ImagePullPolicy)
	}
	ref, digest := a.Image, false
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref, digest = ref[:i], true
	}
	_, tag, tagged := strings.Cut(ref[strings.LastIndexByte(ref, '/')+1:], ":")
	if tag == "latest" || !tagged && !digest {
		return image.PullAlways
	}
	return image.PullIfNotPresent
}
