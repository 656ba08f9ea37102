// Command release builds unitrun's release for Linux from a checkout: for
// each architecture, a tarball with unitrun, the pods' exit hook beside it
// (unitrun-hook, see docs/pods.md), the puller of images beside it
// (unitrun-pull, see docs/images.md) and unitrun-node, the shipped
// systemd units, the D-Bus files, shell completions and man pages, and a
// .deb and an .rpm of the same files (built with nfpm), and SHA256SUMS
// over them all. dist/release.sh runs it.
//
// The build is reproducible: the binaries are built with CGO_ENABLED=0 and
// -trimpath, and carry their version as Go records it from the checkout
// (a tag, or a pseudo-version of the commit; internal/buildinfo reads it),
// from a clone of the commit checked out, whatever changes are not committed;
// every file's time is the commit's, so that two builds of one commit give
// the same bytes. This module is apart from unitrun's own so that no
// unitrun binary links nfpm.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	debugbuildinfo "debug/buildinfo"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

func main() {
	root := flag.String("root", "../..", "the unitrun checkout to build")
	out := flag.String("out", "", "directory the release is written to (default ROOT/out/release)")
	arches := flag.String("arch", "amd64,arm64", "comma-separated Go architectures to build for")
	flag.Parse()
	if *out == "" {
		*out = filepath.Join(*root, "out", "release")
	}
	names, err := release(*root, *out, strings.Split(*arches, ","))
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	for _, n := range names {
		fmt.Println(filepath.Join(*out, n))
	}
}

// Formats are the package formats built for each architecture.
var Formats = []string{"deb", "rpm"}

// release builds the release of the checkout root for each of arches into
// out and returns the names of the files written there, SHA256SUMS last.
func release(root, out string, arches []string) ([]string, error) {
	tmp, err := os.MkdirTemp("", "unitrun-release")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if root, err = cloneHead(root, filepath.Join(tmp, "src")); err != nil {
		return nil, err
	}
	// The tools: binaries for this machine that also write their man pages.
	tools := filepath.Join(tmp, "tools")
	if err := buildBinaries(root, tools, runtime.GOARCH, "unitrun_man"); err != nil {
		return nil, err
	}
	version, mtime, err := versionOf(filepath.Join(tools, "unitrun"))
	if err != nil {
		return nil, err
	}
	shared := filepath.Join(tmp, "shared")
	if err := generate(root, tools, shared, version, mtime); err != nil {
		return nil, err
	}
	var names []string
	for _, arch := range arches {
		bin := filepath.Join(tmp, arch)
		if err := buildBinaries(root, bin, arch, ""); err != nil {
			return nil, err
		}
		files, err := layout(root, bin, shared)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("unitrun-%s-linux-%s.tar.gz", version, arch)
		if err := writeTarball(filepath.Join(out, name), strings.TrimSuffix(name, ".tar.gz"), files, mtime); err != nil {
			return nil, err
		}
		names = append(names, name)
		for _, format := range Formats {
			name, err := writePackage(root, out, format, arch, version, files, mtime)
			if err != nil {
				return nil, err
			}
			names = append(names, name)
		}
	}
	if err := writeSums(out, names); err != nil {
		return nil, err
	}
	return append(names, "SHA256SUMS"), nil
}

// cloneHead clones the commit checked out at root to dir and returns dir.
// A release is built from a commit, not from changes not committed, and
// from a clone whose .git is a directory: the go command stamps a binary's
// version from the checkout only there, not in a git worktree.
func cloneHead(root, dir string) (string, error) {
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", fmt.Errorf("%s is not a git checkout: git rev-parse HEAD: %w", root, err)
	}
	for _, args := range [][]string{
		{"clone", "-q", "--shared", "--no-checkout", root, dir},
		{"-C", dir, "checkout", "-q", "--detach", strings.TrimSpace(string(head))},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir, nil
}

// buildBinaries builds unitrun, unitrun-hook, unitrun-pull and unitrun-node for
// linux/arch into dir, with the build tags tags.
func buildBinaries(root, dir, arch, tags string) error {
	for _, b := range []struct{ module, pkg, name string }{
		{".", "./cmd/unitrun", "unitrun"},
		{".", "./cmd/unitrun-hook", "unitrun-hook"},
		{".", "./cmd/unitrun-pull", "unitrun-pull"},
		{"node", "./cmd/unitrun-node", "unitrun-node"},
	} {
		abs, err := filepath.Abs(filepath.Join(dir, b.name))
		if err != nil {
			return err
		}
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=true", "-tags="+tags, "-o", abs, b.pkg)
		cmd.Dir = filepath.Join(root, b.module)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s for linux/%s: %v\n%s", b.name, arch, err, out)
		}
	}
	return nil
}

// versionOf returns the version the binary at path records and the time
// of its commit ($SOURCE_DATE_EPOCH's, or the epoch, for a build from no
// checkout).
func versionOf(path string) (string, time.Time, error) {
	bi, err := debugbuildinfo.ReadFile(path)
	if err != nil {
		return "", time.Time{}, err
	}
	mtime := time.Unix(0, 0).UTC()
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		mtime = time.Unix(s, 0).UTC()
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" {
			if mtime, err = time.Parse(time.RFC3339, s.Value); err != nil {
				return "", time.Time{}, fmt.Errorf("%s: vcs.time %q: %w", path, s.Value, err)
			}
		}
	}
	version := bi.Main.Version
	if version == "" || version == "(devel)" {
		version = "v0.0.0-devel"
	}
	return version, mtime.UTC(), nil
}

// generate writes what is the same on every architecture to dir: the man
// pages, gzipped, under man/manN, and the completion scripts under
// completions, made by the tools in tools.
func generate(root, tools, dir, version string, mtime time.Time) error {
	env := append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", mtime.Unix()))
	raw := filepath.Join(dir, "raw")
	for _, c := range []struct {
		tool, section string
	}{{"unitrun", "1"}, {"unitrun-node", "8"}} {
		cmd := exec.Command(filepath.Join(tools, c.tool), "man", filepath.Join(raw, "man"+c.section))
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s man: %v\n%s", c.tool, err, out)
		}
	}
	toml, err := daemonTOMLPage(root, version, mtime)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(raw, "man5"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(raw, "man5", "unitrun-daemon.toml.5"), toml, 0o644); err != nil {
		return err
	}
	pages, err := filepath.Glob(filepath.Join(raw, "man?", "*"))
	if err != nil {
		return err
	}
	for _, p := range pages {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(raw, p)
		if err := writeFile(filepath.Join(dir, "man", rel+".gz"), gzipped(data)); err != nil {
			return err
		}
	}
	for shell, name := range completions {
		cmd := exec.Command(filepath.Join(tools, "unitrun"), "completion", shell)
		data, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("unitrun completion %s: %w", shell, err)
		}
		if err := writeFile(filepath.Join(dir, "completions", name), data); err != nil {
			return err
		}
	}
	return os.RemoveAll(raw)
}

// completions names the completion script of each shell.
var completions = map[string]string{"bash": "unitrun.bash", "zsh": "_unitrun", "fish": "unitrun.fish"}

// daemonTOMLPage renders unitrun-daemon.toml(5) from the "## Config"
// section of docs/hostapi.md, the home of the config's reference.
func daemonTOMLPage(root, version string, mtime time.Time) ([]byte, error) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "hostapi.md"))
	if err != nil {
		return nil, err
	}
	_, section, ok := strings.Cut(string(doc), "\n## Config\n")
	if !ok {
		return nil, fmt.Errorf("docs/hostapi.md has no \"## Config\" section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	section = strings.ReplaceAll(section, "\n### ", "\n## ")
	md := fmt.Sprintf(`%% "UNITRUN-DAEMON.TOML" "5" %q "unitrun %s" "unitrun manual"
# NAME
unitrun-daemon.toml - the ops and limits of the unitrun host API daemon

# SYNOPSIS
/etc/unitrun/daemon.toml, /etc/unitrun/ops.d/*.toml

# DESCRIPTION
%s
# SEE ALSO
**unitrun-daemon**(1), **unitrun-op**(1)
`, mtime.Format("Jan 2006"), version, section)
	return md2man.Render([]byte(md)), nil
}

// A file is one file of the release: where it is in the tarball and
// where the packages install it.
type file struct {
	src     string // path on this machine
	tarPath string // path under the tarball's top directory
	deb     string // path the .deb installs it to
	rpm     string // path the .rpm installs it to
	mode    fs.FileMode
}

// layout returns the files of the release of the binaries in bin, with
// the files in shared and the checkout's own.
func layout(root, bin, shared string) ([]file, error) {
	files := []file{
		{src: filepath.Join(bin, "unitrun"), tarPath: "bin/unitrun", deb: "/usr/bin/unitrun", mode: 0o755},
		{src: filepath.Join(bin, "unitrun-hook"), tarPath: "bin/unitrun-hook", deb: "/usr/bin/unitrun-hook", mode: 0o755},
		{src: filepath.Join(bin, "unitrun-pull"), tarPath: "bin/unitrun-pull", deb: "/usr/bin/unitrun-pull", mode: 0o755},
		{src: filepath.Join(bin, "unitrun-node"), tarPath: "bin/unitrun-node", deb: "/usr/bin/unitrun-node", mode: 0o755},
		{src: filepath.Join(root, "dist/dbus/org.unitrun.Ops1.conf"), tarPath: "dbus/org.unitrun.Ops1.conf", deb: "/usr/share/dbus-1/system.d/org.unitrun.Ops1.conf"},
		{src: filepath.Join(root, "dist/dbus/org.unitrun.Ops1.service"), tarPath: "dbus/org.unitrun.Ops1.service", deb: "/usr/share/dbus-1/system-services/org.unitrun.Ops1.service"},
		{src: filepath.Join(shared, "completions/unitrun.bash"), tarPath: "completions/unitrun.bash", deb: "/usr/share/bash-completion/completions/unitrun"},
		{src: filepath.Join(shared, "completions/_unitrun"), tarPath: "completions/_unitrun", deb: "/usr/share/zsh/vendor-completions/_unitrun", rpm: "/usr/share/zsh/site-functions/_unitrun"},
		{src: filepath.Join(shared, "completions/unitrun.fish"), tarPath: "completions/unitrun.fish", deb: "/usr/share/fish/vendor_completions.d/unitrun.fish"},
		{src: filepath.Join(root, "README.md"), tarPath: "README.md", deb: "/usr/share/doc/unitrun/README.md"},
	}
	units, err := filepath.Glob(filepath.Join(root, "dist", "systemd", "*"))
	if err != nil {
		return nil, err
	}
	units = append(units, filepath.Join(root, "dist", "node", "unitrun-node.service"))
	for _, u := range units {
		files = append(files, file{src: u, tarPath: "systemd/" + filepath.Base(u), deb: "/usr/lib/systemd/system/" + filepath.Base(u)})
	}
	pages, err := filepath.Glob(filepath.Join(shared, "man", "man?", "*.gz"))
	if err != nil {
		return nil, err
	}
	for _, p := range pages {
		rel, _ := filepath.Rel(shared, p)
		files = append(files, file{src: p, tarPath: rel, deb: "/usr/share/" + rel})
	}
	for i := range files {
		if files[i].rpm == "" {
			files[i].rpm = files[i].deb
		}
		if files[i].mode == 0 {
			files[i].mode = 0o644
		}
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.tarPath, b.tarPath) })
	return files, nil
}

// writeTarball writes files under top to the gzipped tarball at path,
// each directory before what it holds, owned by root, every time mtime.
func writeTarball(path, top string, files []file, mtime time.Time) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	written := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		name := top + "/" + f.tarPath
		var dirs []string
		for d := filepath.Dir(name); d != "." && !written[d]; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			written[d] = true
		}
		for _, d := range slices.Backward(dirs) {
			if err := tw.WriteHeader(tarHeader(d+"/", tar.TypeDir, 0o755, 0, mtime)); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(tarHeader(name, tar.TypeReg, f.mode, len(data), mtime)); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return writeFile(path, gzipped(buf.Bytes()))
}

// tarHeader is the header of an entry owned by root.
func tarHeader(name string, typ byte, mode fs.FileMode, size int, mtime time.Time) *tar.Header {
	return &tar.Header{Typeflag: typ, Name: name, Mode: int64(mode), Size: int64(size), ModTime: mtime, Uname: "root", Gname: "root", Format: tar.FormatPAX}
}

// writePackage writes the package of format (deb or rpm) of files for
// arch to out and returns its name.
func writePackage(root, out, format, arch, version string, contents []file, mtime time.Time) (string, error) {
	scripts, err := filepath.Abs(filepath.Join(root, "dist", "release", "scripts"))
	if err != nil {
		return "", err
	}
	info := &nfpm.Info{
		Name:        "unitrun",
		Arch:        arch,
		Platform:    "linux",
		Version:     version,
		Release:     "1",
		Section:     "admin",
		Priority:    "optional",
		Maintainer:  "unitrun maintainers <unitrun@users.noreply.github.com>",
		Description: "Run host work as systemd units and know exactly what happened\nunitrun runs a command as a transient systemd unit, or starts an existing\nunit, and reports its exit status, output and timing exactly; with a host\nAPI daemon for callers in containers, pods as systemd unit graphs, and\nunitrun-node, a Kubernetes node that runs Pods as unitrun pods.",
		Homepage:    "https://github.com/unitrun/unitrun",
		MTime:       mtime,
		Overridables: nfpm.Overridables{
			Depends: []string{"systemd"},
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(scripts, "postinstall.sh"),
				PreRemove:   filepath.Join(scripts, "preremove.sh"),
				PostRemove:  filepath.Join(scripts, "postremove.sh"),
			},
			RPM: nfpm.RPM{BuildHost: "unitrun-release", Summary: "Run host work as systemd units and know exactly what happened"},
		},
	}
	for _, f := range contents {
		dst := f.deb
		if format == "rpm" {
			dst = f.rpm
		}
		info.Contents = append(info.Contents, &files.Content{
			Source: f.src, Destination: dst,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: f.mode, MTime: mtime},
		})
	}
	info = nfpm.WithDefaults(info)
	// A Go pseudo-version's prerelease has dashes, which dpkg would take
	// for the start of the Debian revision.
	info.Prerelease = strings.ReplaceAll(info.Prerelease, "-", ".")
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	p, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := p.Package(info, &buf); err != nil {
		return "", fmt.Errorf("%s package for %s: %w", format, arch, err)
	}
	name := p.ConventionalFileName(info)
	return name, writeFile(filepath.Join(out, name), buf.Bytes())
}

// writeSums writes SHA256SUMS in out: each of names with its SHA-256, as
// sha256sum prints them ("sha256sum -c SHA256SUMS" checks them).
func writeSums(out string, names []string) error {
	var b strings.Builder
	for _, n := range slices.Sorted(slices.Values(names)) {
		f, err := os.Open(filepath.Join(out, n))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%x  %s\n", h.Sum(nil), n)
	}
	return writeFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()))
}

// gzipped returns data gzipped with no name and no time in its header.
func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

// writeFile writes data to path, creating its directory, through a
// temporary file renamed into place: a release file is whole or absent.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
