package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// pushToolImage pushes an image of the test tool, its Entrypoint, with
// Cmd cmd and a file only it has, /only-in-image.
func pushToolImage(t *testing.T, reg *imagetest.Registry, repoTag string, cmd ...string) string {
	t.Helper()
	return reg.Push(t, repoTag, imagetest.Image{
		Layers: []imagetest.Layer{imagetest.ToolLayer(t, "/bin/tool"), {{Path: "only-in-image", Body: "from the image\n"}}},
		Config: image.Config{Entrypoint: []string{"/bin/tool"}, Cmd: cmd},
	})
}

// A Kubernetes Pod whose image --image does not map runs that registry
// image, pulled into --image-dir: a container's command and args merge
// with the image's Entrypoint and Cmd by Kubernetes' rules, and pod run
// exits with the status of the container that failed.
func TestPodRunKubernetesImage(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushToolImage(t, reg, "kube:1", "echo", "from-cmd")
	dir, images := t.TempDir(), t.TempDir()
	rmPod(t, dir, "kubeimage")
	path := manifestFile(t, `apiVersion: v1
kind: Pod
metadata: {name: kubeimage}
spec:
  restartPolicy: Never
  containers:
  - {name: none, image: "`+ref+`"}
  - {name: args, image: "`+ref+`", args: [echo, from-args]}
  - {name: command, image: "`+ref+`", command: [/bin/tool, echo, from-command]}
  - {name: both, image: "`+ref+`", command: [/bin/tool], args: [cat, /only-in-image]}
  - {name: fails, image: "`+ref+`", args: [exit, "5"]}
`)
	out, errs, code := podCLI(t, dir, "run", "-q", "--image-dir", images, path)
	if code != 5 {
		t.Fatalf("pod run: exit %d, want the failed container's 5 (stderr %q)", code, errs)
	}
	for _, want := range []string{"none | from-cmd\n", "args | from-args\n", "command | from-command\n", "both | from the image\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("pod run printed %q, without %q", out, want)
		}
	}
	if _, err := os.Stat(filepath.Join(images, "blobs")); err != nil {
		t.Errorf("the image is not in --image-dir: %v", err)
	}
}

// A Kubernetes Pod with runAsNonRoot and no runAsUser runs a registry
// image whose config's User is a uid other than 0, as the kubelet does,
// and is refused naming the field, creating nothing, for an image that
// runs as root.
func TestPodRunKubernetesImageRunAsNonRoot(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	layers := []imagetest.Layer{imagetest.ToolLayer(t, "/bin/tool")}
	user := reg.Push(t, "user:1", imagetest.Image{Layers: layers, Config: image.Config{Entrypoint: []string{"/bin/tool", "id"}, User: "1000:1000"}})
	root := reg.Push(t, "root:1", imagetest.Image{Layers: layers, Config: image.Config{Entrypoint: []string{"/bin/tool", "id"}}})
	dir, images := t.TempDir(), t.TempDir()
	pod := func(ref string) string {
		return manifestFile(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: nonroot}\nspec:\n  restartPolicy: Never\n  securityContext: {runAsNonRoot: true}\n  containers:\n  - {name: c, image: \""+ref+"\"}\n")
	}
	if out, errs, code := podCLI(t, dir, "run", "-q", "--image-dir", images, pod(user)); code != 0 || out != "c | 1000:1000\n" {
		t.Errorf("pod run of an image of user 1000: exit %d, %q, %q; want 0 and c | 1000:1000", code, out, errs)
	}
	if _, errs, code := podCLI(t, dir, "rm", "nonroot"); code != 0 {
		t.Fatalf("pod rm: exit %d: %s", code, errs)
	}
	_, errs, code := podCLI(t, dir, "run", "-q", "--image-dir", images, pod(root))
	if want := `Pod nonroot: spec.containers[0].securityContext.runAsNonRoot: true, but image ` + root + ` runs as root`; code != exitUsage || !strings.Contains(errs, want) {
		t.Errorf("pod run of an image of root: exit %d, %q; want 2 and %q", code, errs, want)
	}
	if left := podLeft(t, dir, "nonroot"); len(left) > 0 {
		t.Errorf("the refused pod left %v", left)
	}
}

// pod run --replace pulls the new manifest's images before it stops and
// removes the pod it replaces: an image that cannot be had (a tag the
// registry lacks, a registry out of reach) leaves that pod running.
func TestPodRunReplaceKeepsPodWhoseImageFails(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	pushToolImage(t, reg, "replace:1", "echo", "x")
	dir := t.TempDir()
	startPod(t, dir, "kept", "name: kept\napps: [{name: a, exec: [/bin/sleep, 600]}]\n", "a")
	first := podStatus(t, dir, "kept")
	for _, tt := range []struct {
		ref  string
		code int
	}{
		{reg.Host + "/replace:nosuch", exitUsage},
		{"127.0.0.1:1/replace:1", exitFailed},
	} {
		file := manifestFile(t, "name: kept\nisolation: namespaces\napps:\n  - {name: a, image: \""+tt.ref+"\"}\n")
		_, errs, code := unitrunEnv(t, []string{"UNITRUN_IMAGE_DIR=" + t.TempDir()}, "pod", "run", "--detach", "--replace", "--state-dir", dir, file)
		if code != tt.code || !strings.Contains(errs, `apps[0].image "`+tt.ref+`"`) {
			t.Errorf("pod run --replace with image %s: exit %d, %q; want %d naming the field", tt.ref, code, errs, tt.code)
		}
		if s := podStatus(t, dir, "kept"); s.Phase != "Running" || !s.StartedAt.Equal(*first.StartedAt) {
			t.Errorf("pod run --replace with image %s changed the pod it would replace: %+v", tt.ref, s)
		}
	}
}

// pod run and pod create show the pull of an image as image pull does,
// piped a line per layer and one for the image, before the pod's events;
// an image the store holds pulls in silence, and -q shows nothing.
func TestPodRunShowsPull(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushToolImage(t, reg, "shown:1", "echo", "x")
	dir := t.TempDir()
	rmPod(t, dir, "shown")
	file := manifestFile(t, "name: shown\nisolation: namespaces\napps:\n  - {name: a, image: \""+ref+"\"}\n")
	pulled := regexp.MustCompile(`(?m)^\S+ layer sha256:[0-9a-f]{64}: .*\n(\S+ layer sha256:[0-9a-f]{64}: .*\n)*\S+ pulled ` + regexp.QuoteMeta(ref) + `: 2 layers, .*\n\S+ app a running\n`)
	held := t.TempDir()
	for _, tt := range []struct {
		args   []string
		images string
		show   bool
	}{
		{[]string{"run"}, held, true},
		{[]string{"run", "--replace"}, held, false}, // the store holds it
		{[]string{"create", "--replace"}, t.TempDir(), true},
		{[]string{"run", "-q", "--replace"}, t.TempDir(), false},
	} {
		_, errs, code := podCLI(t, dir, append(tt.args, "--image-dir", tt.images, file)...)
		if code != 0 {
			t.Fatalf("pod %v: exit %d: %s", tt.args, code, errs)
		}
		shown := strings.Contains(errs, " layer sha256:") || strings.Contains(errs, " pulled ")
		if shown != tt.show || tt.show && tt.args[0] == "run" && !pulled.MatchString(errs) {
			t.Errorf("pod %v: stderr %q; want the pull shown: %v", tt.args, errs, tt.show)
		}
	}
}

// A pod whose image the store lacks under imagePullPolicy Never exits 2,
// naming the field, and creates nothing: a plain manifest's and a
// Kubernetes Pod's, whose error names the container. A relative
// --image-dir is refused; one that cannot be a store is told once.
func TestPodImageMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("UNITRUN_IMAGE_DIR", t.TempDir())
	for _, tt := range []struct{ text, want string }{
		{"name: missing\nisolation: namespaces\napps:\n  - {name: a, image: registry.invalid/none:1, imagePullPolicy: Never}\n",
			`apps[0].image "registry.invalid/none:1": `},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: missing}\nspec:\n  containers:\n  - {name: a, image: registry.invalid/none:1, imagePullPolicy: Never}\n",
			`Pod missing: spec.containers[0].image "registry.invalid/none:1": `},
	} {
		for _, cmd := range []string{"create", "run"} {
			_, errs, code := podCLI(t, dir, cmd, manifestFile(t, tt.text))
			if code != exitUsage || !strings.Contains(errs, tt.want) || !strings.Contains(errs, "pull policy is Never") {
				t.Errorf("pod %s: exit %d, stderr %q; want 2 and %q", cmd, code, errs, tt.want)
			}
			if left := podLeft(t, dir, "missing"); len(left) > 0 {
				t.Errorf("pod %s left %v", cmd, left)
			}
		}
	}
	if _, errs, code := podCLI(t, dir, "create", "--image-dir", "images", manifestFile(t, "name: x\napps: [{name: a, exec: [/bin/true]}]\n")); code != exitUsage || !strings.Contains(errs, `--image-dir "images": must be an absolute path`) {
		t.Errorf("pod create --image-dir images: exit %d, %q; want 2 and the rule", code, errs)
	}
	// A store directory that is a file is bad input, told once, with the
	// flag and the directory, before the manager is reached.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := podCLI(t, dir, "create", "--image-dir", file, manifestFile(t, "name: x\nisolation: namespaces\napps: [{name: a, image: registry.invalid/x:1}]\n")); code != exitUsage || strings.Count(errs, file) != 1 || !strings.Contains(errs, "--image-dir "+file+": must be a directory") {
		t.Errorf("pod create --image-dir of a file: exit %d, %q; want 2 naming --image-dir and %s once", code, errs, file)
	}
}

// A pull that fails for a reason other than the manifest (here the
// registry refuses the credentials) exits 125 naming the app's field in
// the file's own words, after the file, as a bad manifest's error does:
// a Kubernetes Pod's container as spec.containers[N], never as the apps[N]
// of the manifest it maps to. Nothing of the pod is left.
func TestPodImagePullRefusedNamesField(t *testing.T) {
	reg := imagetest.NewAuthRegistry(t, "user", "secret")
	ref := pushToolImage(t, reg, "private:1", "echo", "x")
	env := []string{"UNITRUN_IMAGE_DIR=" + t.TempDir(), "REGISTRY_AUTH_FILE=" + reg.AuthFile(t, "user", "wrong")}
	dir := t.TempDir()
	for _, tt := range []struct{ text, want string }{
		{"name: refused\nisolation: namespaces\napps:\n  - {name: a, image: " + ref + "}\n",
			`: apps[0].image "` + ref + `": `},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: refused}\nspec:\n  containers:\n  - {name: a, image: " + ref + "}\n",
			`: Pod refused: spec.containers[0].image "` + ref + `": `},
	} {
		for _, cmd := range []string{"create", "run"} {
			file := manifestFile(t, tt.text)
			_, errs, code := unitrunEnv(t, env, "pod", cmd, "--state-dir", dir, file)
			if code != exitFailed || !strings.HasPrefix(errs, "unitrun: "+file+tt.want) || !strings.Contains(errs, "refused") {
				t.Errorf("pod %s: exit %d, stderr %q; want 125 and %q", cmd, code, errs, file+tt.want)
			}
			if left := podLeft(t, dir, "refused"); len(left) > 0 {
				t.Errorf("pod %s left %v", cmd, left)
			}
		}
	}
}

// pod exec runs its command in the image's root, as the app runs: in an
// isolated pod, whose container mounted it, and in a host pod, whose
// app's service mounted it in the manager's mount namespace.
func TestPodExecImage(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushToolImage(t, reg, "exec:1", "sleep", "600")
	t.Setenv("UNITRUN_IMAGE_DIR", t.TempDir())
	for _, iso := range []string{"namespaces", "none"} {
		dir := systemdtest.RunDir(t)
		name := "pximg-" + iso
		startPod(t, dir, name, "name: "+name+"\nisolation: "+iso+"\napps:\n  - {name: app, image: "+ref+"}\n", "app")
		if out, errs, code := podExec(t, dir, "", name, "app", "--", "tool", "cat", "/only-in-image"); code != 0 || out != "from the image\n" {
			t.Errorf("pod exec in an image's app, isolation %s: exit %d, %q, %q", iso, code, out, errs)
		}
	}
}

// image rm of an image a pod uses is refused (125), naming the pod in
// words and how to remove it, until pod rm; prune keeps it too.
func TestImageRmOfPodImageRefused(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushToolImage(t, reg, "inuse:1", "echo", "x")
	dir, images := t.TempDir(), t.TempDir()
	if _, errs, code := podCLI(t, dir, "create", "--image-dir", images, manifestFile(t, "name: inuse\nisolation: namespaces\napps:\n  - {name: a, image: "+ref+"}\n")); code != 0 {
		t.Fatalf("pod create: exit %d: %s", code, errs)
	}
	t.Cleanup(func() { podCLI(t, dir, "rm", "--force", "inuse") })
	if _, errs, code := unitrun(t, "image", "prune", "--image-dir", images); code != 0 {
		t.Fatalf("image prune: exit %d: %s", code, errs)
	}
	want := "unitrun: " + ref + " is in use by pod inuse: remove the pod first (unitrun pod rm inuse, or unitrun pod uninstall inuse if it is installed)\n"
	if out, errs, code := unitrun(t, "image", "rm", "--image-dir", images, ref); code != 125 || errs != want {
		t.Errorf("image rm of the pod's image: exit %d, %q, %q; want 125, %q", code, out, errs, want)
	}
	if _, errs, code := podCLI(t, dir, "rm", "inuse"); code != 0 {
		t.Fatalf("pod rm: exit %d: %s", code, errs)
	}
	if out, errs, code := unitrun(t, "image", "rm", "--image-dir", images, ref); code != 0 || !strings.HasPrefix(out, "removed sha256:") {
		t.Errorf("image rm once the pod is removed: exit %d, %q, %q", code, out, errs)
	}
}

// pod status gives each app's image: --json as image, the manifest's
// reference, and image_id, the manifest digest the creation resolved it
// to (none for an app without one), as pod list --json does; the table's
// last column is the image, "-" for none.
func TestPodStatusImage(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushToolImage(t, reg, "status:1", "sleep", "600")
	_, id, _ := strings.Cut(reg.Digest(t, ref), "@")
	dir, images := t.TempDir(), t.TempDir()
	rmPod(t, dir, "shown")
	if _, errs, code := podCLI(t, dir, "create", "--image-dir", images, manifestFile(t, "name: shown\nisolation: namespaces\napps:\n  - {name: img, image: \""+ref+"\"}\n  - {name: host, exec: [/bin/true]}\n")); code != 0 {
		t.Fatalf("pod create: exit %d: %s", code, errs)
	}
	check := func(what string, apps []appView) {
		t.Helper()
		if len(apps) != 2 || apps[0].Image != ref || apps[0].ImageID != id || apps[1].Image != "" || apps[1].ImageID != "" {
			t.Errorf("%s: apps %+v; want img's image %s, image_id %s, and none for host", what, apps, ref, id)
		}
	}
	out, errs, code := podCLI(t, dir, "status", "--json", "shown")
	var v podView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("pod status --json: exit %d, %q, %q", code, out, errs)
	}
	check("pod status --json", v.Apps)
	if !strings.Contains(out, `"image_id": "`+id+`"`) {
		t.Errorf("pod status --json printed %s; want the field image_id", out)
	}
	out, errs, code = podCLI(t, dir, "list", "--json")
	var vs []podView
	if code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs) != 1 {
		t.Fatalf("pod list --json: exit %d, %q, %q", code, out, errs)
	}
	check("pod list --json", vs[0].Apps)
	out, errs, code = podCLI(t, dir, "status", "shown")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasSuffix(lines[1], "\t"+ref) || !strings.HasPrefix(lines[2], "host\t") || !strings.HasSuffix(lines[2], "\t-") {
		t.Errorf("pod status: exit %d, %q, %q; want the image last on img's line, - on host's", code, out, errs)
	}
}

// The image errors of all the apps are told together, each naming its
// field in the file's words, after its Pod: an image missing under Never beside pulls
// that fail (a registry out of reach) exits 2, as a manifest to change
// whatever the registries do, with every error; pulls that fail alone
// exit 125, with each. Nothing of the pod is left.
func TestPodImageErrorsTogether(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("UNITRUN_IMAGE_DIR", t.TempDir())
	missing := `{name: a, image: "registry.invalid/none:1", imagePullPolicy: Never}`
	unreached := `{name: b, image: "127.0.0.1:1/x:1"}, {name: c, image: "127.0.0.1:1/y:1"}`
	for _, tt := range []struct {
		apps string
		code int
		want []string
	}{
		{missing + ", " + unreached, exitUsage, []string{`spec.containers[0].image "registry.invalid/none:1": `, `spec.containers[1].image "127.0.0.1:1/x:1": `, `spec.containers[2].image "127.0.0.1:1/y:1": `}},
		{unreached, exitFailed, []string{`spec.containers[0].image "127.0.0.1:1/x:1": `, `spec.containers[1].image "127.0.0.1:1/y:1": `}},
	} {
		file := manifestFile(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: together}\nspec:\n  containers: ["+tt.apps+"]\n")
		_, errs, code := podCLI(t, dir, "create", file)
		if code != tt.code {
			t.Errorf("pod create of [%s]: exit %d, %q; want %d", tt.apps, code, errs, tt.code)
		}
		for _, w := range tt.want {
			if !strings.Contains(errs, ": Pod together: "+w) && !strings.Contains(errs, "\nPod together: "+w) {
				t.Errorf("pod create of [%s]: stderr %q; want %q", tt.apps, errs, w)
			}
		}
		if left := podLeft(t, dir, "together"); len(left) > 0 {
			t.Errorf("pod create left %v", left)
		}
	}
}

// An --image mapping matches a container's image exactly; when the pull
// of an image it does not map fails, the error tells the mapping of the
// same repository (another tag, or none) that the user may have meant:
// a tag the registry lacks exits 2, a registry out of reach 125, each
// with the hint; a mapping of another repository gives none.
func TestPodImageNearMapping(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	dir := t.TempDir()
	t.Setenv("UNITRUN_IMAGE_DIR", t.TempDir())
	for _, tt := range []struct {
		ref, mapping string
		code         int
		hint         string
	}{
		{reg.Host + "/busybox:1.36", reg.Host + "/busybox:1.28=host", exitUsage, "--image " + reg.Host + "/busybox:1.28=host maps " + reg.Host + "/busybox:1.28, not " + reg.Host + "/busybox:1.36"},
		{"127.0.0.1:1/busybox:1.36", "127.0.0.1:1/busybox=host", exitFailed, "--image 127.0.0.1:1/busybox=host maps 127.0.0.1:1/busybox, not 127.0.0.1:1/busybox:1.36"},
		{"127.0.0.1:1/busybox:1.36", "127.0.0.1:1/alpine=host", exitFailed, ""},
	} {
		file := manifestFile(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: near}\nspec:\n  containers: [{name: a, image: \""+tt.ref+"\", command: [/bin/true]}]\n")
		_, errs, code := podCLI(t, dir, "create", "--image", tt.mapping, file)
		if code != tt.code || !strings.Contains(errs, `spec.containers[0].image "`+tt.ref+`": `) || (tt.hint != "" && !strings.HasSuffix(errs, "; "+tt.hint+"\n")) || (tt.hint == "" && strings.Contains(errs, "maps")) {
			t.Errorf("pod create --image %s of %s: exit %d, %q; want %d naming the field, hint %q", tt.mapping, tt.ref, code, errs, tt.code, tt.hint)
		}
		if left := podLeft(t, dir, "near"); len(left) > 0 {
			t.Errorf("pod create left %v", left)
		}
	}
}
