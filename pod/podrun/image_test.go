package podrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/image/registry"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// imageRunner is newRunner with an image store of its own.
func imageRunner(t *testing.T) *Runner {
	r := newRunner(t)
	r.ImageDir = t.TempDir()
	r.Pull = registryPull
	return r
}

// registryPull is Runner.Pull as unitrun-node's, without credentials.
func registryPull(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error) {
	return registry.Pull(ctx, s, a.Image, image.PullOptions{Policy: a.PullPolicy()})
}

// pushTool pushes an image of the test tool at /bin/tool, its Entrypoint,
// with the extra layers above it, and returns its reference.
func pushTool(t *testing.T, reg *imagetest.Registry, repoTag string, cfg image.Config, layers ...imagetest.Layer) string {
	t.Helper()
	cfg.Entrypoint = []string{"/bin/tool"}
	return reg.Push(t, repoTag, imagetest.Image{Layers: append([]imagetest.Layer{imagetest.ToolLayer(t, "/bin/tool")}, layers...), Config: cfg})
}

// runImagePod runs, in a pod of isolation iso named name, an app of an
// image that prints a file only the image has and one that exits 7 by the
// image's entrypoint, and checks the app printed the file and the pod
// exited 7 (under exitPolicy all: the default, first-failure, would stop
// the first app if the second failed before it printed, as it may on a
// loaded machine); it returns the runner, once the pod has ended, and the
// image's reference.
func runImagePod(t *testing.T, name string, iso pod.Isolation) (*Runner, string) {
	t.Helper()
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, name+":1", image.Config{Cmd: []string{"cat", "/only-in-image"}},
		imagetest.Layer{{Path: "only-in-image", Body: "from the image\n"}})
	r := imageRunner(t)
	run(t, r, fmt.Sprintf(`
name: %[1]s
isolation: %[2]s
exitPolicy: all
apps:
  - name: cat
    image: %[3]s
  - name: fail
    image: %[3]s
    args: ["exit", "7"]
`, name, iso, ref), "")
	if iso == pod.Namespaces {
		defer containerLog(t, r, name)
	}
	s := wait(t, r, name)
	wantPod(t, s, pod.PodFailed, 7)
	log, err := os.ReadFile(pod.LogFile(r.StateDir, name, "cat"))
	if err != nil {
		t.Fatal(err)
	}
	if string(log) != "from the image\n" {
		t.Errorf("the app printed %q, want the image's file", log)
	}
	return r, ref
}

// A pod's app whose image names a registry image runs in that image's
// root: it prints a file that only the image has, and the pod exits with
// the status of the image's entrypoint; Entrypoint and Cmd give the
// command of an app with neither exec nor args, the Entrypoint with the
// app's args the other's.
func TestPodImage(t *testing.T) {
	name := "imaged"
	r, ref := runImagePod(t, name, pod.Namespaces)
	if _, err := os.Stat("/only-in-image"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the host has /only-in-image: %v", err)
	}
	m, err := pod.LoadSpec(r.StateDir, name)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := image.Open(r.ImageDir)
	img, err := st.Lookup(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Apps[0].ImageID; got != img.ID {
		t.Errorf("the pod's spec records image %q, want %q", got, img.ID)
	}
}

// Whiteouts and opaque directories of an image's upper layers hide what
// the layers below have: a file deleted above is absent for the app, and
// an opaque directory lists its own layer's entries alone, and a command
// deleted so ends its run with 127, recorded as any run's.
func TestPodImageWhiteouts(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "wh:1", image.Config{},
		imagetest.Layer{
			{Path: "gone", Body: "below\n"},
			{Path: "dir", Mode: fs.ModeDir | 0o755}, {Path: "dir/a", Body: "a"}, {Path: "dir/b", Body: "b"},
		},
		imagetest.Layer{
			imagetest.Whiteout("gone"),
			{Path: "dir", Mode: fs.ModeDir | 0o755}, imagetest.Opaque("dir"), {Path: "dir/c", Body: "c"},
		})
	r := imageRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: whiteouts
isolation: namespaces
exitPolicy: all
apps:
  - name: ls
    image: %[1]s
    args: ["ls", "/dir"]
  - name: gone
    image: %[1]s
    args: ["cat", "/gone"]
  - name: nocmd
    image: %[1]s
    exec: ["/gone"]
`, ref), "")
	defer containerLog(t, r, name)
	s := wait(t, r, name)
	if a := appOf(t, s, "gone"); a.ExitCode == nil || *a.ExitCode != 1 {
		t.Errorf("cat of a whited-out file: %+v, want exit 1", a)
	}
	if a := appOf(t, s, "nocmd"); a.ExitCode == nil || *a.ExitCode != 127 || !strings.Contains(a.Message, "/gone") {
		t.Errorf("a command that the image deletes: %+v, want 127 recorded with why", a)
	}
	if log, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "ls")); string(log) != "c\n" {
		t.Errorf("the opaque dir lists %q, want c alone", log)
	}
	if log, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "gone")); !strings.Contains(string(log), "no such file") {
		t.Errorf("cat /gone printed %q, want no such file", log)
	}
}

// Two pods of one image share its layers: what an app writes goes to its
// own writable layer, which the other pod's app does not see, and the
// store's layers are unchanged. The image's root is mounted in the pod's
// own mount namespace only: no process of the host has it mounted after
// pod rm, and the app's writable layer goes with the pod.
func TestPodImageSharedLayers(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "shared:1", image.Config{}, imagetest.Layer{{Path: "data", Body: "original"}})
	r := imageRunner(t)
	writer := runRemoved(t, r, fmt.Sprintf(`
name: writer
isolation: namespaces
apps:
  - name: w
    image: %s
    args: ["write", "/data", "changed"]
`, ref))
	defer containerLog(t, r, writer)
	wantPod(t, wait(t, r, writer), pod.PodSucceeded, 0)
	reader := runRemoved(t, r, fmt.Sprintf(`
name: reader
isolation: namespaces
apps:
  - name: r
    image: %s
    exec: ["/bin/tool", "cat", "/data"]
`, ref))
	defer containerLog(t, r, reader)
	wantPod(t, wait(t, r, reader), pod.PodSucceeded, 0)
	if log, _ := os.ReadFile(pod.LogFile(r.StateDir, reader, "r")); string(log) != "original" {
		t.Errorf("the other pod's app read %q, want the image's original", log)
	}
	upper := pod.ImageRoot(r.StateDir, writer, "w").Upper()
	if b, err := os.ReadFile(filepath.Join(upper, "data")); string(b) != "changed" {
		t.Errorf("the writer's upper layer holds %q (%v), want its write", b, err)
	}
	st, _ := image.Open(r.ImageDir)
	img, err := st.Lookup(ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range st.LayerDirs(img) {
		if b, err := os.ReadFile(filepath.Join(dir, "data")); err == nil && string(b) != "original" {
			t.Errorf("layer %s: data is %q, want the store's layers unchanged", dir, b)
		}
	}
	for _, name := range []string{writer, reader} {
		if err := r.Remove(context.Background(), name, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(upper); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the writable layer is left after pod rm: %v", err)
	}
	if ps := mountedBy(t, r.StateDir); len(ps) > 0 {
		t.Errorf("processes still mount the pods' roots after pod rm: %v", ps)
	}
}

// runRemoved is run for a pod that the test removes itself.
func runRemoved(t *testing.T, r *Runner, manifest string) string {
	t.Helper()
	m, err := r.Create(context.Background(), []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Remove(context.Background(), m.Name, true) })
	if err := r.Start(context.Background(), m.Name, ""); err != nil {
		t.Fatal(err)
	}
	return m.Name
}

// mountedBy returns the processes that have a mount under dir in their
// mount namespace.
func mountedBy(t *testing.T, dir string) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	var found []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), " "+dir+"/") {
			found = append(found, p)
		}
	}
	return found
}

// A running pod's image root is an overlayfs mount in its container's
// mount namespace; a container killed outright takes it with it.
func TestPodImageMountGoesWithContainer(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "sleeper:1", image.Config{Cmd: []string{"sleep", "60"}})
	r := imageRunner(t)
	name := runRemoved(t, r, fmt.Sprintf(`
name: killed
isolation: namespaces
apps:
  - name: s
    image: %s
`, ref))
	defer containerLog(t, r, name)
	pid, err := readContainerPID(r.StateDir, name)
	if err != nil {
		t.Fatal(err)
	}
	root := pod.ImageRoot(r.StateDir, name, "s").Root()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil || !strings.Contains(string(b), " "+root+" ") || !strings.Contains(string(b), " - overlay ") {
		t.Fatalf("the container does not mount the image at %s (%v):\n%s", root, err, b)
	}
	if ps := mountedBy(t, r.StateDir); len(ps) == 0 {
		t.Fatal("mountedBy finds no mount of the running pod")
	}
	if err := r.Mgr.KillUnit(context.Background(), pod.ContainerUnit(name), "all", 9); err != nil {
		t.Fatal(err)
	}
	wait(t, r, name)
	if err := r.Remove(context.Background(), name, false); err != nil {
		t.Fatal(err)
	}
	if ps := mountedBy(t, r.StateDir); len(ps) > 0 {
		t.Errorf("processes still mount the pod's root: %v", ps)
	}
}

// A pod whose image the store lacks under imagePullPolicy Never is
// refused, naming the field, and nothing of it is created: no state, no
// unit file, no lease.
func TestPodImageMissingNever(t *testing.T) {
	r := imageRunner(t)
	_, err := r.Create(context.Background(), []byte(`
name: missing
isolation: namespaces
apps:
  - name: a
    image: registry.invalid/none:1
    imagePullPolicy: Never
`))
	var invalid *InvalidError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), `apps[0].image "registry.invalid/none:1": `) || !strings.Contains(err.Error(), "Never") {
		t.Fatalf("create: %v, want an *InvalidError naming apps[0].image and the policy", err)
	}
	if _, err := os.Stat(record.Dir(r.StateDir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pod's state exists: %v", err)
	}
	if err := r.left(context.Background(), "missing", mustUnitDir(t, r)); !errors.As(err, new(*NoPodError)) {
		t.Errorf("the refused pod left something: %v", err)
	}
}

func mustUnitDir(t *testing.T, r *Runner) string {
	t.Helper()
	d, err := r.Mgr.RuntimeUnitDir(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The image's config gives what the app does not set: its User, resolved
// in the image's own /etc/passwd and /etc/group (HOME too), its Env under
// the app's env, its WorkingDir (one the image lacks is made). An exec probe of the app runs in the
// image's root, as the app does: one that reads a file of the image
// passes every time, or the pod would fail.
func TestPodImageConfig(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "cfg:1", image.Config{
		Cmd:        []string{"id"},
		Env:        []string{"A=image", "B=image"},
		WorkingDir: "/srv",
		User:       "web",
	}, imagetest.Layer{
		{Path: "etc", Mode: fs.ModeDir | 0o755},
		{Path: "etc/passwd", Body: "root:x:0:0::/root:/bin/sh\nweb:x:1000:1001::/home/web:/bin/sh\n"},
		{Path: "etc/group", Body: "root:x:0:\nweb:x:1001:\n"},
		{Path: "srv", Mode: fs.ModeDir | 0o755},
		{Path: "only-in-image", Body: "x"},
	})
	r := imageRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: config
isolation: namespaces
exitPolicy: all
apps:
  - name: id
    image: %[1]s
  - name: env
    image: %[1]s
    args: ["env"]
    env: {B: app}
  - name: pwd
    image: %[1]s
    args: ["pwd"]
  - name: made
    image: %[1]s
    args: ["pwd"]
    workingDir: /made/here
  - name: probed
    image: %[1]s
    args: ["sleep", "3"]
    probe:
      exec: ["/bin/tool", "cat", "/only-in-image"]
      periodSeconds: 1
      failureThreshold: 1
      action: fail-pod
`, ref), "")
	defer containerLog(t, r, name)
	s := wait(t, r, name)
	wantPod(t, s, pod.PodSucceeded, 0)
	logOf := func(app string) string {
		b, _ := os.ReadFile(pod.LogFile(r.StateDir, name, app))
		return string(b)
	}
	if got := logOf("id"); got != "1000:1001\n" {
		t.Errorf("the image's user web runs as %q, want 1000:1001 from the image's passwd", got)
	}
	env := logOf("env")
	for _, want := range []string{"A=image\n", "B=app\n", "HOME=/home/web\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if got := logOf("pwd"); got != "/srv\n" {
		t.Errorf("working directory %q, want the image's /srv", got)
	}
	if got := logOf("made"); got != "/made/here\n" {
		t.Errorf("working directory %q, want /made/here, made in the image's root", got)
	}
	if p := appOf(t, s, "probed").Probe; p == nil || p.LastResult != record.ProbeSuccess {
		t.Errorf("exec probe in the image's root: %+v, want a success", p)
	}
}

// readOnlyRoot makes an image's root read-only for the app (its
// writable layer under the pod's state, which stays writable for the
// hooks, included), but for /dev and the terminationMessagePath.
func TestPodImageReadOnlyRoot(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "ro:1", image.Config{})
	r := imageRunner(t)
	name := run(t, r, fmt.Sprintf(`
name: readonly
isolation: namespaces
exitPolicy: all
apps:
  - name: root
    image: %[1]s
    readOnlyRoot: true
    args: ["write", "/x", "no"]
  - name: msg
    image: %[1]s
    readOnlyRoot: true
    terminationMessagePath: /dev/termination-log
    args: ["write", "/dev/termination-log", "why"]
  - name: rw
    image: %[1]s
    args: ["write", "/x", "yes"]
`, ref), "")
	defer containerLog(t, r, name)
	s := wait(t, r, name)
	if a := appOf(t, s, "root"); a.ExitCode == nil || *a.ExitCode != 1 {
		t.Errorf("a write to a read-only image root: %+v, want exit 1", a)
	}
	if log, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "root")); !strings.Contains(string(log), "read-only file system") {
		t.Errorf("the write printed %q, want read-only file system", log)
	}
	for _, app := range []string{"msg", "rw"} {
		if a := appOf(t, s, app); a.ExitCode == nil || *a.ExitCode != 0 {
			t.Errorf("app %s: %+v, want exit 0", app, a)
		}
	}
	if b, _ := os.ReadFile(record.TerminationFile(r.StateDir, name, "msg")); string(b) != "why" {
		t.Errorf("termination message %q, want why", b)
	}
}

// The store refuses to remove an image that a pod uses, naming the pod's
// lease, until pod rm releases it.
func TestPodImageRemoveRefused(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "leased:1", image.Config{Cmd: []string{"echo", "x"}})
	r := imageRunner(t)
	m, err := r.Create(context.Background(), []byte(fmt.Sprintf("name: leased\nisolation: namespaces\napps:\n  - {name: a, image: %s}\n", ref)))
	if err != nil {
		t.Fatal(err)
	}
	st, err := image.Open(r.ImageDir)
	if err != nil {
		t.Fatal(err)
	}
	var inUse *image.InUseError
	if _, err := st.Remove(ref); !errors.As(err, &inUse) || !slices.Contains(inUse.Holders, ImageHolder(m.Name)) {
		t.Fatalf("image rm of the pod's image: %v, want it refused, in use by %s", err, ImageHolder(m.Name))
	}
	if err := r.Remove(context.Background(), m.Name, false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Remove(ref); err != nil {
		t.Errorf("image rm once the pod is removed: %v", err)
	}
}

// layerFile reads a file of an image from its unpacked layers, top
// first, as overlayfs would show it: the topmost layer's, none where a
// whiteout or an opaque directory above hides it, none through a
// symlink (which could lead out of the image).
func TestLayerFile(t *testing.T) {
	top, mid, bottom := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(dir, path, body string) {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(bottom, "etc/passwd", "bottom")
	write(bottom, "etc/group", "bottom")
	write(bottom, "etc/shadow", "bottom")
	write(mid, "etc/passwd", "mid")
	write(top, "etc/hosts", "top")
	if err := unix.Mknod(filepath.Join(top, "etc/group"), unix.S_IFCHR, 0); err != nil {
		t.Fatal(err)
	}
	dirs := []string{top, mid, bottom}
	for path, want := range map[string]string{"etc/passwd": "mid", "etc/group": "", "etc/shadow": "bottom", "etc/hosts": "top", "etc/none": ""} {
		if got := string(layerFile(dirs, path)); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	if err := unix.Setxattr(filepath.Join(mid, "etc"), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	if got := layerFile(dirs, "etc/shadow"); got != nil {
		t.Errorf("etc/shadow under an opaque etc: %q, want none", got)
	}
	link := t.TempDir()
	if err := os.Symlink(filepath.Join(bottom, "etc"), filepath.Join(link, "etc")); err != nil {
		t.Fatal(err)
	}
	if got := layerFile([]string{link, bottom}, "etc/passwd"); got != nil {
		t.Errorf("etc/passwd through a symlinked etc: %q, want none", got)
	}
}

// Apps of one pod that name one image under one policy pull it once,
// under Always too: the pod's creation asks the registry for the image's
// manifest as often as one pull does.
func TestPodImagePulledOnce(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "once:1", image.Config{Cmd: []string{"echo", "x"}})
	var manifests atomic.Int32
	reg.SetWrap(func(w http.ResponseWriter, req *http.Request, registry http.Handler) {
		if strings.Contains(req.URL.Path, "/manifests/") {
			manifests.Add(1)
		}
		registry.ServeHTTP(w, req)
	})
	r := imageRunner(t)
	create(t, r, fmt.Sprintf("name: once\nisolation: namespaces\napps:\n  - {name: a, image: %[1]s, imagePullPolicy: Always}\n  - {name: b, image: %[1]s, imagePullPolicy: Always}\n", ref))
	byPod := manifests.Swap(0)
	st, _ := image.Open(r.ImageDir)
	if _, err := registry.Pull(context.Background(), st, ref, image.PullOptions{Policy: image.PullAlways}); err != nil {
		t.Fatal(err)
	}
	if byOne := manifests.Load(); byPod != byOne || byOne == 0 {
		t.Errorf("the pod's two apps made %d manifest requests, one pull %d", byPod, byOne)
	}
}

// Runner.Pull, the caller's own pull (unitrun-node's, with a Pod's
// credentials), gets each image: its image
// is the app's, and its failure fails the creation as it is, creating
// nothing.
func TestPodImagePullHook(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "hook:1", image.Config{Cmd: []string{"echo", "x"}})
	r := imageRunner(t)
	failed := errors.New("pulled by the caller: refused")
	var asked []string
	r.Pull = func(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error) {
		asked = append(asked, a.Name+" "+a.Image+" "+string(a.PullPolicy()))
		if a.Name == "bad" {
			return nil, failed
		}
		return registryPull(ctx, s, a)
	}
	text := fmt.Sprintf("name: hooked\nisolation: namespaces\napps:\n  - {name: a, image: %s}\n", ref)
	create(t, r, text)
	if want := []string{"a " + ref + " IfNotPresent"}; !slices.Equal(asked, want) {
		t.Errorf("Pull was asked %q, want %q", asked, want)
	}
	_, err := r.Create(context.Background(), []byte(strings.Replace(text, "hooked", "hooked2", 1)+"  - {name: bad, image: other.invalid/x:1}\n"))
	if !errors.Is(err, failed) || errors.As(err, new(*InvalidError)) {
		t.Errorf("create with a failed pull: %v, want the caller's error, not a bad manifest", err)
	}
	if _, err := os.Stat(record.Dir(r.StateDir, "hooked2")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pod whose pull failed has state: %v", err)
	}
}

// pruneAfterPull is registryPull that, once the image is pulled, tries an
// image prune that must wait (its context ended, it gives up at once), as
// the pod is not created yet, then starts one that waits in the
// background and sends what it removed to pruned.
func pruneAfterPull(t *testing.T, pruned chan<- *image.Pruned) func(context.Context, *image.Store, *pod.App) (*image.Image, error) {
	return func(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error) {
		img, err := registryPull(ctx, s, a)
		if err != nil {
			return nil, err
		}
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		if p, err := s.Prune(ended); !errors.Is(err, context.Canceled) {
			t.Errorf("an image prune between the pull and the pod's lease: %+v, %v; want it to wait for the lease", p, err)
		}
		go func() {
			p, err := s.Prune(context.Background())
			if err != nil {
				t.Errorf("image prune: %v", err)
			}
			pruned <- p
		}()
		return img, nil
	}
}

// wantPrunedNothing checks that the prune pruneAfterPull started removed
// no image and that the store has the image of ref, leased by pod name.
func wantPrunedNothing(t *testing.T, r *Runner, pruned <-chan *image.Pruned, ref, name string) {
	t.Helper()
	if p := <-pruned; p != nil && len(p.Images) > 0 {
		t.Errorf("the image prune started while the pod was created removed %s", p.Images[0].ID)
	}
	st, err := image.Open(r.ImageDir)
	if err != nil {
		t.Fatal(err)
	}
	var inUse *image.InUseError
	if _, err := st.Remove(ref); !errors.As(err, &inUse) || !slices.Equal(inUse.Holders, []string{ImageHolder(name)}) {
		t.Errorf("image rm of the pod's image: %v, want it refused, in use by %s alone", err, ImageHolder(name))
	}
}

// An image prune started while a pod is created, between its image's
// pull and its lease, waits until the pod has leased the image: the pod
// runs it, and the image stays in the store.
func TestPodImagePruneWaitsForCreate(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "prunecreate:1", image.Config{Cmd: []string{"echo", "x"}})
	r := imageRunner(t)
	pruned := make(chan *image.Pruned, 1)
	r.Pull = pruneAfterPull(t, pruned)
	name := run(t, r, fmt.Sprintf("name: prunecreate\nisolation: namespaces\napps:\n  - {name: a, image: %s}\n", ref), "")
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	wantPrunedNothing(t, r, pruned, ref, name)
}

// pod run --replace holds the store from its pulls until the new pod has
// leased its images, across the old pod's removal, which releases the old
// pod's lease: an image prune started after the pull waits until the new
// pod has leased the image (the old pod's lease would have kept it only
// until the removal), and the new pod runs it.
func TestPodImagePruneWaitsForReplace(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushTool(t, reg, "prunereplace:1", image.Config{Cmd: []string{"echo", "x"}})
	r := imageRunner(t)
	manifest := fmt.Sprintf("name: prunereplace\nisolation: namespaces\napps:\n  - {name: a, image: %s}\n", ref)
	name := create(t, r, manifest)
	pruned := make(chan *image.Pruned, 1)
	r.Pull = pruneAfterPull(t, pruned)
	if _, err := r.Replace(context.Background(), []byte(manifest), ""); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), name, ""); err != nil && !errors.As(err, new(*EndedError)) {
		t.Fatal(err)
	}
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	wantPrunedNothing(t, r, pruned, ref, name)
}
