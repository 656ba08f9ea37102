package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packaged are the files every package installs besides the man pages.
var packaged = []string{
	"/usr/bin/unitrun",
	"/usr/bin/unitrun-hook",
	"/usr/bin/unitrun-pull",
	"/usr/bin/unitrun-node",
	"/usr/lib/systemd/system/unitrun.service",
	"/usr/lib/systemd/system/unitrun.socket",
	"/usr/lib/systemd/system/unitrun-argv.socket",
	"/usr/lib/systemd/system/unitrun-example-pivot.service",
	"/usr/lib/systemd/system/unitrun-node.service",
	"/usr/share/dbus-1/system.d/org.unitrun.Ops1.conf",
	"/usr/share/dbus-1/system-services/org.unitrun.Ops1.service",
	"/usr/share/bash-completion/completions/unitrun",
	"/usr/share/fish/vendor_completions.d/unitrun.fish",
	"/usr/share/doc/unitrun/README.md",
}

// manPages are man pages every package and tarball must have (among one
// for each subcommand).
var manPages = []string{
	"man1/unitrun.1.gz", "man1/unitrun-run.1.gz", "man1/unitrun-start.1.gz", "man1/unitrun-wait.1.gz",
	"man1/unitrun-install.1.gz", "man1/unitrun-daemon.1.gz", "man1/unitrun-pod-run.1.gz", "man1/unitrun-op-call.1.gz",
	"man5/unitrun-daemon.toml.5.gz", "man8/unitrun-node.8.gz",
}

// startsUnit matches a maintainer script line that starts, restarts or
// enables a unit.
var startsUnit = regexp.MustCompile(`(systemctl|deb-systemd-invoke|deb-systemd-helper|service)\b.*\b(start|restart|try-restart|reload-or-restart|enable|reenable|preset|unmask|isolate)\b`)

// TestRelease builds the release for linux/amd64 and checks what an
// operator gets: the tarball's files, each package's file list at the
// distribution's paths, maintainer scripts that start and enable
// nothing, man pages that man renders (unitrun-run(1) with its exit
// statuses), the node's unit as systemd reads it, SHA256SUMS, and that a
// second build of the commit is the same, byte for byte; then the release
// for linux/arm64: its binaries and packages are that architecture's.
func TestRelease(t *testing.T) {
	for _, tool := range []string{"git", "dpkg-deb", "rpm", "man", "sha256sum", "systemd-analyze"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (.ci/run installs it): %v", tool, err)
		}
	}
	out := t.TempDir()
	names, err := release("../..", out, []string{"amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 4 || !strings.HasSuffix(names[0], "-linux-amd64.tar.gz") || !strings.HasSuffix(names[1], "_amd64.deb") || !strings.HasSuffix(names[2], ".x86_64.rpm") {
		t.Fatalf("release wrote %q; want a tarball, a .deb, an .rpm and SHA256SUMS", names)
	}
	top := strings.TrimSuffix(names[0], ".tar.gz") + "/"
	tarFiles := tarball(t, filepath.Join(out, names[0]))

	t.Run("tarball", func(t *testing.T) {
		want := []string{"bin/unitrun", "bin/unitrun-hook", "bin/unitrun-pull", "bin/unitrun-node", "README.md", "completions/_unitrun", "completions/unitrun.bash", "completions/unitrun.fish",
			"dbus/org.unitrun.Ops1.conf", "dbus/org.unitrun.Ops1.service", "systemd/unitrun.service", "systemd/unitrun-node.service"}
		for _, p := range manPages {
			want = append(want, "man/"+p)
		}
		for _, w := range want {
			if _, ok := tarFiles[top+w]; !ok {
				t.Errorf("the tarball lacks %s", top+w)
			}
		}
		// systemd starts the hook at every exit of a pod's app, unitrun
		// the puller at every pull: static, no dynamic loader to run
		// first.
		for _, b := range []string{"bin/unitrun-hook", "bin/unitrun-pull"} {
			if f, err := elf.NewFile(bytes.NewReader(tarFiles[top+b])); err != nil {
				t.Errorf("%s: %v", b, err)
			} else if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
				t.Errorf("%s has a dynamic loader (PT_INTERP); want a static build", b)
			}
		}
	})
	for _, pkg := range []struct{ format, file, zsh string }{
		{"deb", names[1], "/usr/share/zsh/vendor-completions/_unitrun"},
		{"rpm", names[2], "/usr/share/zsh/site-functions/_unitrun"},
	} {
		t.Run(pkg.format, func(t *testing.T) {
			path := filepath.Join(out, pkg.file)
			got := packageFiles(t, pkg.format, path)
			want := append(slices.Clone(packaged), pkg.zsh)
			for _, p := range manPages {
				want = append(want, "/usr/share/man/"+p)
			}
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("%s lacks %s; it has:\n%s", pkg.file, w, strings.Join(got, "\n"))
				}
			}
			for _, g := range got {
				if !strings.HasPrefix(g, "/usr/") {
					t.Errorf("%s installs %s, outside /usr", pkg.file, g)
				}
			}
			for name, text := range scripts(t, pkg.format, path) {
				if m := startsUnit.FindString(text); m != "" {
					t.Errorf("%s's %s starts or enables a unit: %q", pkg.file, name, m)
				}
			}
		})
	}
	t.Run("man", func(t *testing.T) {
		dir := t.TempDir()
		for name, data := range tarFiles {
			if rel, ok := strings.CutPrefix(name, top+"man/"); ok {
				p := filepath.Join(dir, filepath.Base(rel))
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command("man", "--warnings", "-l", p)
				cmd.Env = append(os.Environ(), "MANWIDTH=200", "MAN_KEEP_FORMATTING=0")
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				text, err := cmd.Output()
				text = overstrike.ReplaceAll(text, nil) // bold and underline, as grotty writes them to a pipe
				if err != nil || stderr.Len() > 0 || !bytes.Contains(text, []byte("NAME")) {
					t.Errorf("man -l %s: %v\n%s\n%s", rel, err, stderr.Bytes(), text)
				}
				if filepath.Base(rel) == "unitrun-run.1.gz" {
					// Rows of the exit statuses' table, as man lays it out.
					for _, row := range []*regexp.Regexp{
						tableRow("status", "meaning"),
						tableRow("the command's own", "it exited with that code"),
						tableRow("2", "bad flags or arguments"),
						tableRow("125", "unitrun failed: no manager, or the start job"),
						tableRow("127", "the command, or its #! interpreter, was not found"),
					} {
						if !row.Match(text) {
							t.Errorf("man unitrun-run has no row %s in its exit statuses:\n%s", row, text)
						}
					}
				}
			}
		}
	})
	t.Run("node-unit", func(t *testing.T) {
		// systemd-analyze verify, with the binaries where the unit runs them.
		dir := t.TempDir()
		unit := strings.NewReplacer("/usr/bin/unitrun-node ", filepath.Join(dir, "unitrun-node")+" ").Replace(string(tarFiles[top+"systemd/unitrun-node.service"]))
		if err := os.WriteFile(filepath.Join(dir, "unitrun-node"), tarFiles[top+"bin/unitrun-node"], 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "unitrun-node.service")
		if err := os.WriteFile(p, []byte(unit), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("systemd-analyze", "verify", "--man=no", "--recursive-errors=no", p)
		cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL=info", "SYSTEMD_LOG_COLOR=0")
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify unitrun-node.service: %v\n%s", err, out)
		}
	})
	t.Run("reproducible", func(t *testing.T) {
		// A second build of the same commit, from a clone of its own.
		again := t.TempDir()
		if _, err := release("../..", again, []string{"amd64"}); err != nil {
			t.Fatal(err)
		}
		first, err1 := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
		second, err2 := os.ReadFile(filepath.Join(again, "SHA256SUMS"))
		if err1 != nil || err2 != nil || !bytes.Equal(first, second) {
			t.Errorf("two builds of one commit differ (%v, %v):\n%s\n%s", err1, err2, first, second)
		}
	})
	t.Run("sums", func(t *testing.T) {
		cmd := exec.Command("sha256sum", "--strict", "-c", "SHA256SUMS")
		cmd.Dir = out
		if text, err := cmd.CombinedOutput(); err != nil || strings.Count(string(text), ": OK\n") != 3 {
			t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, text)
		}
	})
	t.Run("arm64", func(t *testing.T) {
		// The same release for linux/arm64: its binaries are arm64's, and
		// its packages say so and install the same files.
		dir := t.TempDir()
		names, err := release("../..", dir, []string{"arm64"})
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 4 || !strings.HasSuffix(names[0], "-linux-arm64.tar.gz") || !strings.HasSuffix(names[1], "_arm64.deb") || !strings.HasSuffix(names[2], ".aarch64.rpm") {
			t.Fatalf("release wrote %q; want an arm64 tarball, .deb and .rpm and SHA256SUMS", names)
		}
		top := strings.TrimSuffix(names[0], ".tar.gz") + "/"
		files := tarball(t, filepath.Join(dir, names[0]))
		for _, b := range []string{"bin/unitrun", "bin/unitrun-hook", "bin/unitrun-pull", "bin/unitrun-node"} {
			f, err := elf.NewFile(bytes.NewReader(files[top+b]))
			if err != nil || f.Machine != elf.EM_AARCH64 {
				t.Errorf("%s: %v, %v; want an ELF file for arm64 (EM_AARCH64)", b, err, f)
			}
		}
		for _, pkg := range []struct{ format, file, arch string }{
			{"deb", names[1], "arm64"},
			{"rpm", names[2], "aarch64"},
		} {
			path := filepath.Join(dir, pkg.file)
			query := exec.Command("dpkg-deb", "-f", path, "Architecture")
			if pkg.format == "rpm" {
				query = exec.Command("rpm", "-qp", "--qf", "%{ARCH}", path)
			}
			if arch, err := query.Output(); err != nil || strings.TrimSpace(string(arch)) != pkg.arch {
				t.Errorf("%s's architecture: %q, %v; want %s", pkg.file, arch, err, pkg.arch)
			}
			got := packageFiles(t, pkg.format, path)
			for _, w := range packaged {
				if !slices.Contains(got, w) {
					t.Errorf("%s lacks %s", pkg.file, w)
				}
			}
		}
	})
}

// overstrike matches the character that a backspace after it strikes out.
var overstrike = regexp.MustCompile(".\x08")

// tableRow matches a row of a table as man draws it, whose cells begin
// with the words of cells, which man may space out and wrap.
func tableRow(cells ...string) *regexp.Regexp {
	var re []string
	for _, c := range cells {
		re = append(re, strings.Join(strings.Fields(regexp.QuoteMeta(c)), `\s+`))
	}
	return regexp.MustCompile(`│\s*` + strings.Join(re, `[\s│]*│\s*`))
}

// tarball returns the regular files of the gzipped tarball at path.
func tarball(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return tarEntries(t, zr)
}

// tarEntries returns the regular files of the tar stream r.
func tarEntries(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = data
		}
	}
}

// packageFiles returns the paths of the files the package at path installs.
func packageFiles(t *testing.T, format, path string) []string {
	t.Helper()
	if format == "rpm" {
		out, err := exec.Command("rpm", "-qlp", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(out))
	}
	data, err := exec.Command("dpkg-deb", "--fsys-tarfile", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := range tarEntries(t, bytes.NewReader(data)) {
		got = append(got, strings.TrimPrefix(name, "."))
	}
	return got
}

// scripts returns the maintainer scripts of the package at path.
func scripts(t *testing.T, format, path string) map[string]string {
	t.Helper()
	got := map[string]string{}
	if format == "rpm" {
		out, err := exec.Command("rpm", "-qp", "--scripts", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		got["scripts"] = string(out)
		return got
	}
	dir := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-e", path, dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -e: %v\n%s", err, out)
	}
	for _, name := range []string{"preinst", "postinst", "prerm", "postrm"} {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			got[name] = string(data)
		}
	}
	if len(got) == 0 {
		t.Errorf("%s has no maintainer scripts: systemd is not told of its units", path)
	}
	return got
}
