package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"golang.org/x/sys/unix"
)

// TestImageCLI pulls, lists, inspects and removes images as a user
// would, and checks each failure's words and exit status.
func TestImageCLI(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "app:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "a", Body: "a"}}, {{Path: "b", Body: "b"}}}})
	dir := t.TempDir()
	env := []string{"UNITRUN_IMAGE_DIR=" + dir, "HOME=" + t.TempDir(), "REGISTRY_AUTH_FILE=", "DOCKER_CONFIG="}

	out, errs, code := unitrunEnv(t, env, "image", "pull", "--json", ref)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("image pull --json: exit %d, stdout %q, stderr %q; want a line per layer and the image", code, out, errs)
	}
	var img struct {
		ID    string   `json:"id"`
		Names []string `json:"names"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &img); err != nil || img.ID == "" || img.Names[0] != ref {
		t.Fatalf("image pull --json's last line %q: %v", lines[2], err)
	}
	// Pulled again (policy Always), the layers come from the store: said
	// so, with no size as if they were fetched.
	out, errs, code = unitrunEnv(t, env, "image", "pull", ref)
	if code != 0 || out != img.ID+"\n" {
		t.Errorf("image pull: exit %d, %q; want the ID", code, out)
	}
	if strings.Count(errs, ": already held\n") != 2 || strings.Count(errs, "layer sha256:") != 2 {
		t.Errorf("image pull of held layers: stderr %q; want each of the 2 layers \"already held\"", errs)
	}
	if out, errs, code := unitrunEnv(t, env, "image", "ls"); code != 0 || !strings.HasPrefix(out, ref+"\t"+strings.TrimPrefix(img.ID, "sha256:")[:12]+"\t") ||
		!strings.HasPrefix(errs, dir+": 1 image, ") {
		t.Errorf("image ls: exit %d, stdout %q, stderr %q; want the image and \"1 image\"", code, out, errs)
	}
	// The line that ends a pull counts its layers in words: "1 layer".
	one := reg.Push(t, "one:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "c", Body: "c"}}}})
	if _, errs, code := unitrunEnv(t, env, "image", "pull", one); code != 0 || !strings.Contains(errs, " pulled "+one+": 1 layer, ") {
		t.Errorf("image pull of a one-layer image: exit %d, stderr %q; want \"pulled %s: 1 layer, \"", code, errs, one)
	}
	if out, _, code := unitrunEnv(t, env, "__complete", "image", "inspect", reg.Host+"/a"); code != 0 || out != ref+"\n:4\n" {
		t.Errorf("completion of image names: exit %d, %q", code, out)
	}
	if out, _, code := unitrunEnv(t, env, "image", "inspect", ref); code != 0 || !strings.Contains(out, `"id": "`+img.ID+`"`) || !strings.Contains(out, `"layerDirs"`) {
		t.Errorf("image inspect: exit %d, %q", code, out)
	}

	auth := imagetest.NewAuthRegistry(t, "u", "p")
	private := auth.Push(t, "private:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "f"}}}})
	otherArch := "s390x"
	if runtime.GOARCH == otherArch {
		otherArch = "ppc64le"
	}
	foreign := reg.Push(t, "foreign:1", imagetest.Image{Arch: otherArch, Layers: []imagetest.Layer{{{Path: "f"}}}})
	notJSON := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(notJSON, []byte("{bad"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"image", "pull", "Not A Name"}, 2, `"Not A Name" is not an image reference (REGISTRY/REPOSITORY[:TAG] or REPOSITORY@sha256:DIGEST, in lower case): a repository has only the characters abcdefghijklmnopqrstuvwxyz0123456789_-./, not "N"` + "\n"},
		{[]string{"inject", "--image", "Not A Name", "--path", "/f"}, 2, `--image: "Not A Name" is not an image reference`},
		{[]string{"image", "pull", "--policy", "Sometimes", ref}, 2, "--policy"},
		{[]string{"image", "pull", "--image-dir", "rel", ref}, 2, "--image-dir"},
		{[]string{"image", "pull", reg.Host + "/app:2"}, 125, "registry " + reg.Host + " has no image app:2"},
		{[]string{"image", "pull", private}, 125, "registry " + auth.Host + " refused access without credentials: there is no credentials file at "},
		{[]string{"image", "pull", "127.0.0.1:1/app:1"}, 125, "cannot reach registry 127.0.0.1:1"},
		{[]string{"image", "pull", "registry.invalid/app:1"}, 125, "pulling registry.invalid/app:1: cannot reach registry registry.invalid: its host name registry.invalid could not be resolved (DNS)\n"},
		{[]string{"image", "pull", foreign}, 125, "pulling " + foreign + ": the image is for linux/" + otherArch + ", not for this host's linux/" + runtime.GOARCH + "\n"},
		{[]string{"image", "pull", "--auth-file", "/nonexistent/auth.json", private}, 2, "--auth-file: the credentials file /nonexistent/auth.json does not exist"},
		{[]string{"image", "pull", "--auth-file", notJSON, private}, 2, "--auth-file: the credentials file " + notJSON + " is not JSON (at byte 2): want {\"auths\""},
		{[]string{"inject", "--image", private, "--path", "/f", "--auth-file", notJSON}, 2, "--auth-file: the credentials file " + notJSON + " is not JSON"},
		{[]string{"image", "inspect", reg.Host + "/app:2"}, 1, "no such image in the store"},
		{[]string{"image", "rm", "sha256:" + strings.Repeat("f", 12)}, 1, "no such image in the store"},
	} {
		_, errs, code := unitrunEnv(t, env, tc.args...)
		if code != tc.code || !strings.HasPrefix(errs, "unitrun: ") || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	// Listing and inspecting make no store where there is none; a file
	// as --image-dir is bad input.
	absent := filepath.Join(t.TempDir(), "absent")
	if out, errs, code := unitrunEnv(t, env, "image", "list", "--image-dir", absent); code != 0 || out != "" || errs != absent+": 0 images, 0B on disk\n" {
		t.Errorf("image list of an absent store: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := unitrunEnv(t, env, "image", "inspect", "--image-dir", absent, ref); code != 1 || !strings.Contains(errs, "no such image in the store") {
		t.Errorf("image inspect in an absent store: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := unitrunEnv(t, env, "image", "pull", "--image-dir", absent, "Not A Name"); code != 2 {
		t.Errorf("image pull of a bad name: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(absent); err == nil {
		t.Errorf("image list, inspect or a pull of a bad name made the store %s", absent)
	}
	for _, args := range [][]string{{"list", "--image-dir", notJSON}, {"pull", "--image-dir", notJSON + "/store", ref}} {
		_, errs, code := unitrunEnv(t, env, append([]string{"image"}, args...)...)
		if want := "--image-dir " + args[2] + ": must be a directory"; code != 2 || !strings.Contains(errs, want) {
			t.Errorf("image %q: exit %d, stderr %q; want 2 and %q", args, code, errs, want)
		}
	}
	// pod create takes --image-dir by the same rule, before the manager
	// is reached: it opened the store and failed (125), not naming the flag.
	manifest := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(manifest, []byte("name: dirfile\nisolation: namespaces\napps:\n  - {name: a, image: "+ref+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs, code = unitrunEnv(t, env, "pod", "create", "--state-dir", t.TempDir(), "--image-dir", notJSON, manifest)
	if want := "unitrun: --image-dir " + notJSON + ": must be a directory, and it or one above it is a file\n"; code != 2 || errs != want {
		t.Errorf("pod create --image-dir FILE: exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
	out, _, _ = unitrunEnv(t, env, "image", "list", "--help")
	if i := strings.Index(out, "--image-dir"); i < 0 || !strings.HasPrefix(out[i:], "--image-dir DIR   the image store's DIR ($UNITRUN_IMAGE_DIR sets the default) (default \""+dir+"\")\n") {
		t.Errorf("image list --help: %q; want --image-dir's default once", out)
	}

	_, errs, code = unitrunEnv(t, append(env, "REGISTRY_AUTH_FILE="+notJSON), "image", "pull", private)
	if want := "$REGISTRY_AUTH_FILE: the credentials file " + notJSON + " is not JSON"; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("pull with a bad $REGISTRY_AUTH_FILE: exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
	if _, errs, code := unitrunEnv(t, env, "image", "pull", "--auth-file", auth.AuthFile(t, "u", "p"), private); code != 0 {
		t.Errorf("pull with --auth-file: exit %d, %q", code, errs)
	}

	if out, _, code := unitrunEnv(t, env, "image", "rm", ref); code != 0 || out != "removed "+img.ID+"\n" {
		t.Errorf("image rm: exit %d, %q", code, out)
	}
	if out, _, code := unitrunEnv(t, env, "image", "prune"); code != 0 || !strings.HasPrefix(out, "removed sha256:") {
		t.Errorf("image prune: exit %d, %q", code, out)
	}
}

// TestImagePullInterruptedResumes interrupts a pull mid-layer as Ctrl-C
// does: unitrun exits 130, and the next pull completes.
func TestImagePullInterruptedResumes(t *testing.T) {
	ref, reached := stallingRegistry(t, "slow:1")
	dir := t.TempDir()
	cmd := exec.Command(systemdtest.Binary(t), "image", "pull", "--image-dir", dir, ref)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-reached
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "SIGINT") {
		t.Fatalf("pull interrupted: %v, stderr %q; want exit 130 naming SIGINT", err, errb.String())
	}
	if _, errs, code := unitrunEnv(t, nil, "image", "pull", "--image-dir", dir, ref); code != 0 {
		t.Fatalf("the pull after the interrupted one: exit %d, %q", code, errs)
	}
	if out, _, _ := unitrunEnv(t, nil, "image", "inspect", "--image-dir", dir, ref); !strings.Contains(out, filepath.Join(dir, "layers")) {
		t.Errorf("inspect after the resumed pull: %q", out)
	}
}

// TestInjectFromImage copies one binary out of an image into the inject
// dir, as the seeds' flow does with the agent's image, and runs it.
func TestInjectFromImage(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "agent:1", imagetest.Image{Layers: []imagetest.Layer{
		imagetest.ToolLayer(t, "/usr/bin/agent"),
		{{Path: "usr/share/big", Body: strings.Repeat("x", 1<<16)}},
	}})
	dir := filepath.Join(t.TempDir(), "bin")
	env := []string{"UNITRUN_IMAGE_DIR=" + t.TempDir()}
	out, errs, code := unitrunEnv(t, env, "inject", "--dir", dir, "--image", ref, "--path", "/usr/bin/agent")
	path := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(path, filepath.Join(dir, "agent-")) {
		t.Fatalf("inject --image: exit %d, %q, %q", code, out, errs)
	}
	if got, err := exec.Command(path, "echo", "from", "the", "image").Output(); err != nil || string(got) != "from the image\n" {
		t.Errorf("the injected binary: %q, %v", got, err)
	}
	if again, _, _ := unitrunEnv(t, env, "inject", "--dir", dir, "--image", ref, "--path", "/usr/bin/agent"); again != out {
		t.Errorf("a second inject: %q, want the same path %q", again, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--image", ref, "--path", "/usr/bin/nope"}, 2, "--path /usr/bin/nope: the image " + ref + " has no such file"},
		{[]string{"--image", ref, "--path", "/usr/bin"}, 2, "--path: /usr/bin in " + ref + ": a directory, not a regular file of the image"},
		{[]string{"--image", ref, "--path", "usr/bin/agent"}, 2, "--path \"usr/bin/agent\": must be an absolute path"},
		{[]string{"--image", ref}, 2, "--image needs --path"},
		{[]string{"--image", ref, "--path", "/usr/bin/agent", "./x"}, 2, "it takes no PATH"},
		{[]string{"--image", reg.Host + "/agent:2", "--path", "/usr/bin/agent"}, 125, "has no image agent:2"},
	} {
		_, errs, code := unitrunEnv(t, env, append([]string{"inject", "--dir", dir}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("inject %q: exit %d, %q; want %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// inject --image of a single image for another platform is refused as
// image pull refuses it: exit 125, the same words, nothing installed.
func TestInjectRefusesOtherPlatform(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	other := "s390x"
	if other == runtime.GOARCH {
		other = "riscv64"
	}
	ref := reg.Push(t, "s390x-agent:1", imagetest.Image{Arch: other, Layers: []imagetest.Layer{{{Path: "usr/bin/agent", Body: "a"}}}})
	env := []string{"UNITRUN_IMAGE_DIR=" + t.TempDir()}
	want := "unitrun: pulling " + ref + ": the image is for linux/" + other + ", not for this host's linux/" + runtime.GOARCH + "\n"
	if _, errs, code := unitrunEnv(t, env, "image", "pull", "-q", ref); code != 125 || errs != want {
		t.Fatalf("image pull: exit %d, %q; want 125, %q", code, errs, want)
	}
	dir := filepath.Join(t.TempDir(), "bin")
	if out, errs, code := unitrunEnv(t, env, "inject", "--dir", dir, "--image", ref, "--path", "/usr/bin/agent"); code != 125 || errs != want || out != "" {
		t.Errorf("inject --image: exit %d, %q, %q; want image pull's 125, %q", code, out, errs, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused inject left %d files in --dir", len(entries))
	}
}

// TestPullBarLines checks the line a pull draws on a terminal: layers
// done of all, bytes of all (once every layer's size is known, bytes done
// before), rate.
func TestPullBarLines(t *testing.T) {
	b := newPullBar(nil, "example/app:1")
	b.update(image.Progress{Layers: 2, Layer: "sha256:a", Total: 2048, Done: 1024})
	if got := b.lines(); len(got) != 1 || !strings.HasPrefix(got[0], "pulling example/app:1: 0/2 layers, 1.0KiB, ") || !strings.HasSuffix(got[0], "/s") {
		t.Errorf("the pull's line before the second layer's size is known: %q", got)
	}
	b.update(image.Progress{Layers: 2, Layer: "sha256:a", Total: 2048, Done: 2048, Complete: true})
	b.update(image.Progress{Layers: 2, Layer: "sha256:b", Total: 4096, Done: 1024})
	got := b.lines()
	if len(got) != 1 || !strings.HasPrefix(got[0], "pulling example/app:1: 1/2 layers, 3.0KiB/6.0KiB, ") || !strings.HasSuffix(got[0], "/s") {
		t.Errorf("the pull's line: %q", got)
	}
}

// TestImagePullFullDisk pulls onto a store whose filesystem fills: exit
// 125, the store named, no image left.
func TestImagePullFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v)", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	reg := imagetest.NewRegistry(t)
	body := make([]byte, 2<<20)
	rand.Read(body)
	ref := reg.Push(t, "huge:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "big", Body: string(body)}}}})
	store := filepath.Join(dir, "store")
	_, errs, code := unitrun(t, "image", "pull", "--image-dir", store, ref)
	if want := "unitrun: pulling " + ref + ": the filesystem of " + store + " is full\n"; code != 125 || errs != want {
		t.Errorf("pull onto a full disk: exit %d, %q; want 125, %q", code, errs, want)
	}
	if out, _, code := unitrun(t, "image", "ls", "--image-dir", store); code != 0 || out != "" {
		t.Errorf("image ls after the failed pull: exit %d, %q; want no image", code, out)
	}
}

// TestImagePullWithoutUnitrunPull runs a unitrun installed without the
// unitrun-pull beside it: image pull, inject --image and a pod of an image
// exit 125 saying what is missing and where unitrun looks for it (or,
// for a unitrun-pull that is not executable, that it cannot be executed),
// but a pull that the store serves (policy IfNotPresent) needs no
// unitrun-pull.
func TestImagePullWithoutUnitrunPull(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "unitrun")
	data, err := os.ReadFile(systemdtest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	images := t.TempDir()
	manifest := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(manifest, []byte("name: nopull\nisolation: namespaces\napps:\n  - {name: a, image: quay.io/example/app:1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "unitrun-pull, which pulls images, is missing: unitrun looks for it beside itself, at " + alone + "-pull"
	for _, args := range [][]string{
		{"image", "pull", "--image-dir", images, "quay.io/example/app:1"},
		{"inject", "--dir", t.TempDir(), "--image-dir", images, "--image", "quay.io/example/app:1", "--path", "/bin/app"},
		{"pod", "create", "--state-dir", t.TempDir(), "--image-dir", images, manifest},
	} {
		cmd := exec.Command(alone, args...)
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 125 || !strings.Contains(errb.String(), want) {
			t.Errorf("%q: %v, stderr %q; want exit 125 and %q", args, err, errb.String(), want)
		}
	}

	// A unitrun-pull that is there but cannot be executed is told in
	// words, not as the fork/exec that failed.
	if err := os.WriteFile(alone+"-pull", []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, "image", "pull", "--image-dir", images, "quay.io/example/app:1")
	var errb strings.Builder
	cmd.Stderr = &errb
	err = cmd.Run()
	if want := "unitrun: unitrun-pull, which pulls images, cannot be executed: " + alone + "-pull: permission denied\n"; cmd.ProcessState.ExitCode() != 125 || errb.String() != want {
		t.Errorf("image pull with a unitrun-pull that is not executable: %v, stderr %q; want exit 125 and %q", err, errb.String(), want)
	}
	if err := os.Remove(alone + "-pull"); err != nil {
		t.Fatal(err)
	}

	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, "held:1", imagetest.Image{Layers: []imagetest.Layer{{{Path: "a", Body: "a"}}}})
	id, errs, code := unitrunEnv(t, nil, "image", "pull", "--image-dir", images, ref)
	if code != 0 {
		t.Fatalf("image pull: exit %d, %q", code, errs)
	}
	out, err := exec.Command(alone, "image", "pull", "--policy", "IfNotPresent", "--image-dir", images, ref).Output()
	if err != nil || string(out) != id {
		t.Errorf("image pull --policy IfNotPresent of an image the store holds, without unitrun-pull: %v, %q; want %q", err, out, id)
	}
}

// TestImagePullKilledTakesPullerAlong kills unitrun mid-pull with SIGKILL,
// which it cannot catch: unitrun-pull, its child, ends too, rather than
// pull on and hold the image's lock against the next pull.
func TestImagePullKilledTakesPullerAlong(t *testing.T) {
	ref, reached := stallingRegistry(t, "orphan:1")
	cmd := exec.Command(systemdtest.Binary(t), "image", "pull", "--image-dir", t.TempDir(), ref)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-reached
	// unitrun's child, started by whichever of its threads ran the pull.
	var puller int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", cmd.Process.Pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); strings.HasSuffix(exe, "unitrun-pull") {
				puller = pid
			}
		}
	}
	if puller == 0 {
		t.Fatal("no unitrun-pull child of unitrun")
	}
	cmd.Process.Kill()
	cmd.Wait()
	for i := 0; systemdtest.Alive(puller); i++ {
		if i == 3000 {
			syscall.Kill(puller, syscall.SIGKILL)
			t.Fatalf("unitrun-pull (pid %d) still runs 30 s after unitrun was killed", puller)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestImageDirFromVariable: a store directory that $UNITRUN_IMAGE_DIR
// gives is refused naming the variable, not a flag the user never typed.
func TestImageDirFromVariable(t *testing.T) {
	_, errs, code := unitrunEnv(t, []string{"UNITRUN_IMAGE_DIR=images"}, "image", "list")
	if code != exitUsage || !strings.Contains(errs, `$UNITRUN_IMAGE_DIR "images": must be an absolute path`) {
		t.Errorf("image list with a relative $UNITRUN_IMAGE_DIR: exit %d, %q", code, errs)
	}
	_, errs, code = unitrunEnv(t, []string{"UNITRUN_IMAGE_DIR=/srv/images"}, "image", "list", "--image-dir", "images")
	if code != exitUsage || !strings.Contains(errs, `--image-dir "images": must be an absolute path`) {
		t.Errorf("image list --image-dir images: exit %d, %q", code, errs)
	}
}

// TestUnitrunPullByHand: unitrun-pull run by a user, with --help or
// nothing, says what it is for and which commands to use, in words, on
// stderr, and exits 2; its JSON lines are for unitrun alone.
func TestUnitrunPullByHand(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"fetch", "x"}} {
		cmd := exec.Command(systemdtest.Binary(t)+"-pull", args...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || out.Len() != 0 || !strings.Contains(errb.String(), `"unitrun image pull"`) {
			t.Errorf("unitrun-pull %q: %v, stdout %q, stderr %q; want exit 2 and the commands to use", args, err, out.String(), errb.String())
		}
	}
}

// stallingRegistry pushes image name to a registry of its own whose first
// blob stops after a few bytes until its client is gone, and returns the
// image's reference and a channel closed once that blob has begun.
func stallingRegistry(t *testing.T, name string) (string, <-chan struct{}) {
	reg := imagetest.NewRegistry(t)
	ref := reg.Push(t, name, imagetest.Image{Layers: []imagetest.Layer{{{Path: "a", Body: strings.Repeat("x", 1<<16)}}}})
	reached := make(chan struct{})
	var once sync.Once
	reg.SetWrap(func(w http.ResponseWriter, r *http.Request, registry http.Handler) {
		stall := false
		if strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			once.Do(func() { stall = true })
		}
		if !stall {
			registry.ServeHTTP(w, r)
			return
		}
		w.Write(make([]byte, 10))
		w.(http.Flusher).Flush()
		close(reached)
		<-r.Context().Done()
	})
	return ref, reached
}
