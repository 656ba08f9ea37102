package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// Images maps a container's image to the absolute path of a root
// filesystem or to HostImage: the repeated --image NAME=/rootfs|host flag
// of unitrun pod run, pod create and unitrun-node.
type Images map[string]string

func (m Images) String() string {
	var s []string
	for name, dir := range m {
		s = append(s, name+"="+dir)
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// Set adds one NAME=/rootfs|host mapping.
func (m Images) Set(s string) error {
	name, dir, ok := strings.Cut(s, "=")
	if !ok || name == "" || (dir != HostImage && !filepath.IsAbs(dir)) {
		return fmt.Errorf("%q: want NAME=host or NAME=/absolute/rootfs", s)
	}
	m[name] = dir
	return nil
}

// Type is the flag's value in --help.
func (Images) Type() string { return "NAME=/rootfs|host" }

// Near returns, for an image ref that m does not map (a mapping matches
// a container's image exactly), what m maps of the same repository,
// under another tag or digest or none, telling the user who meant it for
// ref: "--image busybox=host maps busybox, not busybox:1.36" (the first
// such mapping by name). It returns "" if m maps ref itself or nothing of
// its repository, or ref is not a reference.
func (m Images) Near(ref string) string {
	repo, ok := imageRepository(ref)
	if _, mapped := m[ref]; mapped || !ok {
		return ""
	}
	names := slices.Sorted(maps.Keys(m))
	for _, name := range names {
		if r, ok := imageRepository(name); ok && r == repo {
			return fmt.Sprintf("--image %s=%s maps %s, not %s", name, m[name], name, ref)
		}
	}
	return ""
}

// imageRepository is the repository of image reference ref, normalized
// ("index.docker.io/library/busybox" for busybox:1.36), and whether ref
// is one.
func imageRepository(ref string) (string, bool) {
	n, err := image.Normalize(ref)
	if err != nil {
		return "", false
	}
	if repo, _, ok := strings.Cut(n, "@"); ok {
		return repo, true
	}
	return n[:strings.LastIndex(n, ":")], true
}

// StateVolumeDir is the directory of volume vol of pod name whose state
// is under stateDir: a directory of the pod's state, removed with it.
func StateVolumeDir(stateDir, name, vol string) string {
	return filepath.Join(record.Dir(stateDir, name), "volumes", vol)
}

// A Planned pod is a document of a file of Pods as unitrun pod run runs
// it: the JSON of its unitrun manifest, and the emptyDirs to make once
// the pod is created, before it starts; or, for a document refused, every
// reason (Refused), and no manifest.
type Planned struct {
	Name      string
	Manifest  []byte
	EmptyDirs []*VolumeDir
	Inits     int // the Pod's init containers, for ContainerPaths
	Refused   Refusals
	// Images are, for a Pod refused, its apps in its manifest's order,
	// each with the registry image to check beside its refusals (none
	// for an app whose image or imagePullPolicy is refused).
	Images []pod.App
	// Where is how an error of the document is told: "Pod NAME" (a
	// Pod's; "Pod with no name" for one without), after "document N"
	// when the file has several.
	Where string
}

// Tell returns msg, lines of errors about p's document, each line after
// p.Where.
func (p *Planned) Tell(msg string) string {
	lines := strings.Split(msg, "\n")
	if p.Where != "" {
		for i, l := range lines {
			lines[i] = p.Where + ": " + l
		}
	}
	return strings.Join(lines, "\n")
}

// Plan maps each Pod of data (Decode) to the unitrun pod that runs it
// without a cluster: named after its metadata.name, its hostPath volumes
// the host's directories, its emptyDirs their StateVolumeDir in stateDir,
// with o's Images, AllowPrivileged and MinRestartBackoff (the rest of o
// is a cluster's, which there is none of): a Pod is refused what needs a
// cluster (its ConfigMaps, Secrets and volumes of API objects, its IP),
// and has the namespace, service account and node a Pod has on a node
// (setDefaults), the node this host's (HostNodeName).
// It returns every document, each with every refusal of it; its error
// is for data that Decode cannot read.
func Plan(data []byte, o Options, stateDir string) ([]Planned, error) {
	docs, err := Decode(data)
	if err != nil {
		return nil, err
	}
	// Without a host name, a fieldRef to spec.nodeName is empty.
	node, _ := HostNodeName()
	var plans []Planned
	for i, doc := range docs {
		p, rs := doc.Pod, doc.Refusals
		var where []string
		if len(docs) > 1 {
			where = append(where, fmt.Sprintf("document %d", i+1))
		}
		if !p.isPod() {
			plans = append(plans, Planned{Refused: rs, Where: strings.Join(where, ": ")})
			continue
		}
		name := p.Metadata.Name
		switch {
		case name == "":
			where = append(where, "Pod with no name")
			if p.Metadata.GenerateName.IsSet() {
				rs.Add("metadata.name", "required: metadata.generateName is not supported, the pod is named after metadata.name")
			} else {
				rs.Add("metadata.name", "required: the pod is named after it")
			}
		default:
			where = append(where, "Pod "+name)
			if err := pod.CheckNames(name); err != nil {
				rs.Add("metadata.name", "%v", err)
			}
			for j := range i {
				if docs[j].Pod.Metadata.Name == name {
					rs.Add("metadata.name", "%q is the name of document %d's Pod too", name, j+1)
				}
			}
		}
		for _, f := range []struct {
			set         bool
			field, rule string
		}{
			{p.Spec.ActiveDeadlineSeconds.IsSet(), "spec.activeDeadlineSeconds", "not supported by unitrun pod run: unitrun-node stops a Pod at its deadline"},
			{p.Spec.ReadinessGates.IsSet(), "spec.readinessGates", "not supported by unitrun pod run: their conditions are set through a cluster's API"},
			{p.Spec.HostAliases.IsSet(), "spec.hostAliases", "not supported by unitrun pod run, whose apps see the host's /etc/hosts (unitrun-node writes the Pod's own)"},
			{p.Spec.DNSConfig.IsSet(), "spec.dnsConfig", "not supported by unitrun pod run, whose apps see the host's /etc/resolv.conf (unitrun-node writes the Pod's own)"},
		} {
			if f.set {
				rs.Add(f.field, "%s", f.rule)
			}
		}
		p.setDefaults(node)
		po := Options{Name: name, Images: o.Images, RegistryImages: o.RegistryImages, AllowPrivileged: o.AllowPrivileged, MinRestartBackoff: o.MinRestartBackoff, Volumes: map[string]*VolumeDir{}}
		var empty []*VolumeDir
		for k, v := range p.Spec.Volumes {
			field := fmt.Sprintf("spec.volumes[%d].emptyDir", k)
			switch {
			case v.HostPath != nil:
				po.Volumes[v.Name] = &VolumeDir{Dir: v.HostPath.Path}
			case v.EmptyDir != nil:
				if v.EmptyDir.Medium == "Memory" {
					rs.Add(field+".medium", "Memory is not supported by unitrun pod run: its emptyDir is a directory of the pod's state (unitrun-node mounts a tmpfs)")
				}
				if v.EmptyDir.SizeLimit != nil {
					rs.Add(field+".sizeLimit", "not supported by unitrun pod run, which does not measure a volume (unitrun-node evicts a Pod past it)")
				}
				d := &VolumeDir{Dir: StateVolumeDir(stateDir, name, v.Name), EmptyDir: true}
				po.Volumes[v.Name], empty = d, append(empty, d)
			}
		}
		// Without a cluster nothing is waited for: what needs one is
		// refused.
		m, err := Translate(p, &po)
		var trs Refusals
		if errors.As(err, &trs) {
			rs = append(rs, trs...)
		} else if err != nil {
			return nil, err
		}
		plan := Planned{Name: name, EmptyDirs: empty, Inits: len(p.Spec.InitContainers), Refused: rs, Where: strings.Join(where, ": ")}
		if len(rs) > 0 {
			plan.Images = checkedImages(m, rs, plan.Inits)
		} else if plan.Manifest, err = json.Marshal(m); err != nil {
			return nil, err
		}
		plans = append(plans, plan)
	}
	return plans, nil
}

// checkedImages are the apps of m, the manifest as far as a Pod refused
// rs maps, with inits init containers, each with its registry image and
// pull policy unless rs refuses one of those.
func checkedImages(m *Manifest, rs Refusals, inits int) []pod.App {
	if m == nil {
		return nil
	}
	apps := make([]pod.App, len(m.Apps))
	for i, a := range m.Apps {
		field := ContainerPaths(fmt.Sprintf("apps[%d]", i), inits) + ".image"
		if !slices.ContainsFunc(rs, func(r Refusal) bool { return strings.HasPrefix(r.Field, field) }) {
			apps[i] = pod.App{Name: a.Name, Image: a.Image, ImagePullPolicy: a.ImagePullPolicy}
		}
	}
	return apps
}

// Err returns every refusal of p, one a line, each told as Tell tells
// it, or nil if there is none.
func (p *Planned) Err() error {
	if len(p.Refused) == 0 {
		return nil
	}
	lines := make([]string, len(p.Refused))
	for i, r := range p.Refused {
		lines[i] = r.Error()
	}
	return errors.New(p.Tell(strings.Join(lines, "\n")))
}

// MakeEmptyDir makes the emptyDir v: its directory, empty and writable
// by every user, and in it the SubPaths.
func (v *VolumeDir) MakeEmptyDir() error {
	if err := os.MkdirAll(filepath.Dir(v.Dir), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(v.Dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(v.Dir, 0o777); err != nil {
		return err
	}
	for _, sub := range v.SubPaths {
		if err := os.MkdirAll(filepath.Join(v.Dir, sub), 0o777); err != nil {
			return err
		}
	}
	return nil
}

// HostNodeName is the name of this host's node where none is given: the
// host name in lower case, as the kubelet names its node (unitrun-node's
// --node-name default, and the spec.nodeName of a Pod that unitrun pod run
// runs).
func HostNodeName() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", err
	}
	return strings.ToLower(strings.TrimSpace(h)), nil
}

// setDefaults gives p, a Pod of a file, what a Pod has once the API server
// has defaulted it and a node runs it, where p sets none: the namespace
// and service account "default", and node, the node's name. Its fieldRefs
// read them.
func (p *Pod) setDefaults(node string) {
	if p.Metadata.Namespace == "" {
		p.Metadata.Namespace = "default"
	}
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = "default"
	}
	if p.Spec.NodeName == "" {
		p.Spec.NodeName = node
	}
}
