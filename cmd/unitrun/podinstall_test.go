package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// podStatusOn is pod status --json of pod name in the state dir, on the
// manager of env, and its exit status.
func podStatusOn(t *testing.T, env []string, stateDir, name string) (podView, int) {
	t.Helper()
	out, errs, code := unitrunEnv(t, env, "pod", "status", "--json", "--state-dir", stateDir, name)
	var v podView
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("pod status --json: %v: %q", err, out)
		}
	} else {
		t.Logf("pod status %s: exit %d: %s", name, code, errs)
	}
	return v, code
}

// bootManager boots an embedded manager of the test's own, which the test
// may stop and boot again, stopped when the test ends, and returns it and
// the environment by which unitrun reaches it.
func bootManager(t *testing.T) (*manager.Embedded, []string) {
	t.Helper()
	e := &manager.Embedded{Dir: systemdtest.RunDir(t)}
	if _, err := e.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(context.Background(), 30*time.Second) })
	return e, []string{manager.EnvManager + "=private:" + e.Socket()}
}

// pod install writes the manifest (root's alone) and enables the pod's
// instance of unitrun-pod@.service, whose start runs the pod; once its
// manager is stopped and booted again on the same directories, the pod
// runs again, started anew, and the unit's journal holds the status of
// the last boot's run as it ended. pod uninstall leaves no manifest, unit,
// link, state or loaded unit, and a second one finds nothing to do. A bad
// manifest (also one naming a user this host lacks), a bad name and a
// relative --pods-dir are refused with exit 2, before anything is written,
// and so are a Kubernetes Pod, which pod install does not take, and a
// --unit-dir out of the manager's unit path.
func TestPodInstallSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	e, env := bootManager(t)
	podsDir := filepath.Join(t.TempDir(), "pods")
	stateDir := t.TempDir()
	// Enabled until reboot: the links go to the manager's runtime unit
	// directory, which it reads (a persistent enable writes to the
	// user's ~/.config, which this manager's unit path leaves out), and
	// which survives the manager's restart here.
	unitDir := filepath.Join(e.Dir, "systemd", "user")
	flags := []string{"--pods-dir", podsDir, "--unit-dir", unitDir, "--state-dir", stateDir, "--runtime"}

	bad := manifestFile(t, "name: inst\napps: [{name: a, exec: [/bin/sleep, 600], restartPolicy: Sometimes}]\n")
	if _, errs, code := unitrunEnv(t, env, append([]string{"pod", "install", bad}, flags...)...); code != 2 || !strings.Contains(errs, "restartPolicy") {
		t.Errorf("pod install of a bad manifest: exit %d, %q; want 2 naming the field", code, errs)
	}
	if _, errs, code := unitrunEnv(t, env, append([]string{"pod", "uninstall", "Inst"}, flags...)...); code != 2 || !strings.Contains(errs, `"Inst"`) {
		t.Errorf("pod uninstall of a bad name: exit %d, %q; want 2 naming it", code, errs)
	}
	if _, errs, code := unitrunEnv(t, env, append([]string{"pod", "install", manifestFile(t, "name: inst\napps: [{name: a, exec: [/bin/true], user: no-such-user-here}]\n")}, flags...)...); code != 2 || !strings.Contains(errs, "apps[0].user") {
		t.Errorf("pod install of an app whose user this host lacks: exit %d, %q; want 2 naming the field", code, errs)
	}
	if _, errs, code := unitrunEnv(t, env, "pod", "install", "--pods-dir", "pods", manifestFile(t, "name: inst\napps: [{name: a, exec: [/bin/true]}]\n")); code != 2 || !strings.Contains(errs, `--pods-dir "pods": must be an absolute path`) {
		t.Errorf("pod install --pods-dir pods: exit %d, %q; want 2 naming the flag", code, errs)
	}
	kubePod := manifestFile(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: inst}\nspec: {containers: [{name: a, image: x, command: [/bin/true]}]}\n")
	wantErr := "unitrun: " + kubePod + " holds Kubernetes YAML: pod install takes a unitrun manifest only (pod run and pod create take Pods)\n"
	if _, errs, code := unitrunEnv(t, env, append([]string{"pod", "install", kubePod}, flags...)...); code != 2 || errs != wantErr {
		t.Errorf("pod install of a Kubernetes Pod: exit %d, %q; want 2, %q", code, errs, wantErr)
	}
	// A --unit-dir the manager does not read, or empties itself (its
	// transient units' directory): the pod would not start at boot, so it
	// is refused, naming the flag and the dirs the manager reads.
	for _, unread := range []string{t.TempDir(), filepath.Join(e.Dir, "systemd", "transient")} {
		elsewhere := []string{"--pods-dir", podsDir, "--unit-dir", unread, "--state-dir", stateDir, "--runtime"}
		if _, errs, code := unitrunEnv(t, env, append([]string{"pod", "install", manifestFile(t, "name: inst\napps: [{name: a, exec: [/bin/true]}]\n")}, elsewhere...)...); code != 2 || !strings.Contains(errs, "--unit-dir "+unread+": the manager does not load units from it at boot") || !strings.Contains(errs, unitDir) {
			t.Errorf("pod install --unit-dir %s: exit %d, %q; want 2 naming the flag and the manager's %s", unread, code, errs, unitDir)
		}
		if _, err := os.Stat(filepath.Join(unread, "unitrun-pod@.service")); !os.IsNotExist(err) {
			t.Errorf("the refused --unit-dir holds the template unit: %v", err)
		}
	}
	if _, err := os.Stat(podsDir); !os.IsNotExist(err) {
		t.Errorf("bad input left %s: %v", podsDir, err)
	}

	manifest := manifestFile(t, "name: inst\napps: [{name: a, exec: [/bin/sleep, 600]}]\n")
	out, errs, code := unitrunEnv(t, env, append([]string{"pod", "install", "--now", manifest}, flags...)...)
	if code != 0 || out != "unitrun-pod@inst.service\n" {
		t.Fatalf("pod install --now: exit %d, %q, %q", code, out, errs)
	}
	if fi, err := os.Stat(filepath.Join(podsDir, "inst.yaml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("installed manifest: %v, %v; want it, 0600", fi, err)
	}
	first, code := podStatusOn(t, env, stateDir, "inst")
	if code != 0 || first.Phase != "Running" || first.StartedAt == nil {
		t.Fatalf("after pod install --now: %+v, exit %d; want the pod running", first, code)
	}

	if err := e.Stop(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		again, code := podStatusOn(t, env, stateDir, "inst")
		if code == 0 && again.Phase == "Running" && again.StartedAt != nil && again.StartedAt.After(*first.StartedAt) && again.Apps[0].State == "running" {
			break
		}
		if i == 600 {
			t.Fatalf("after the manager's restart: %+v, exit %d; want the pod running again", again, code)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The unit printed the status of the run it replaced, the last
	// boot's, ended by the manager's stop, into this boot's journal,
	// under its identifier: journald files pod status's lines under no
	// unit of this user manager if the process ended before it read them.
	const last = "inst\tSucceeded\t0\t1\na\texited\t143\t0\t"
	for i := 0; ; i++ {
		out, _ := exec.Command("journalctl", "--directory="+e.JournalDir(), "--no-pager", "-o", "cat", "-t", "unitrun-pod@inst").Output()
		if strings.Contains(string(out), last) {
			break
		}
		if i == 600 {
			t.Fatalf("the journal of unitrun-pod@inst:\n%s\nwant the last boot's status, %q", out, last)
		}
		time.Sleep(50 * time.Millisecond)
	}

	for i := range 2 {
		if out, errs, code := unitrunEnv(t, env, append([]string{"pod", "uninstall", "inst"}, flags...)...); code != 0 || out != "" {
			t.Fatalf("pod uninstall (%d): exit %d, %q, %q", i+1, code, out, errs)
		}
	}
	var left []string
	for _, dir := range []string{podsDir, unitDir, filepath.Join(unitDir, "default.target.wants"), filepath.Join(stateDir, "pods")} {
		entries, _ := os.ReadDir(dir)
		for _, en := range entries {
			if strings.Contains(en.Name(), "inst") || en.Name() == "unitrun-pod@.service" {
				left = append(left, filepath.Join(dir, en.Name()))
			}
		}
	}
	conn, err := manager.Dial(ctx, e.Target())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	units, err := conn.ListUnitNames(ctx, "unitrun")
	if err != nil {
		t.Fatal(err)
	}
	left = append(left, units...)
	if len(left) > 0 {
		t.Errorf("pod uninstall left %q", left)
	}
	if _, code := podStatusOn(t, env, stateDir, "inst"); code != exitNoPod {
		t.Errorf("pod status after pod uninstall: exit %d, want %d (no such pod)", code, exitNoPod)
	}
}

// pod run of a name that exists says so, names --replace and changes
// nothing; pod run --replace stops and removes the old pod and runs the
// new one; pod create --replace alike.
func TestPodRunReplace(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "again")
	manifest := manifestFile(t, "name: again\napps: [{name: a, exec: [/bin/sleep, 600]}]\n")
	if _, errs, code := podCLI(t, dir, "run", "--detach", manifest); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	first := podStatus(t, dir, "again")
	if out, errs, code := podCLI(t, dir, "run", "--detach", manifest); code != exitFailed || out != "" || !strings.Contains(errs, "pod again already exists in state dir "+dir) || !strings.Contains(errs, "--replace") {
		t.Errorf("pod run of an existing name: exit %d, %q, %q; want %d, saying so and naming --replace", code, out, errs, exitFailed)
	}
	if s := podStatus(t, dir, "again"); s.Phase != "Running" || !s.StartedAt.Equal(*first.StartedAt) {
		t.Errorf("the refused pod run changed the pod: %+v", s)
	}
	if out, errs, code := podCLI(t, dir, "run", "--detach", "--replace", manifest); code != 0 || out != "again\n" {
		t.Fatalf("pod run --replace: exit %d, %q, %q", code, out, errs)
	}
	second := podStatus(t, dir, "again")
	if second.Phase != "Running" || !second.StartedAt.After(*first.StartedAt) {
		t.Errorf("after pod run --replace: %+v; want a pod started anew", second)
	}
	if out, errs, code := podCLI(t, dir, "create", "--replace", manifest); code != 0 || out != "again\n" {
		t.Fatalf("pod create --replace: exit %d, %q, %q", code, out, errs)
	}
	if s := podStatus(t, dir, "again"); s.Phase != "Pending" {
		t.Errorf("after pod create --replace: %+v; want a created pod, Pending", s)
	}
	for _, bad := range []string{fmt.Sprintf("name: again\napps: [{name: a, exec: [%s]}]\n", "./x")} {
		if _, errs, code := podCLI(t, dir, "run", "--replace", manifestFile(t, bad)); code != 2 {
			t.Errorf("pod run --replace of a bad manifest: exit %d, %q; want 2", code, errs)
		}
		if s := podStatus(t, dir, "again"); s.Phase != "Pending" {
			t.Errorf("pod run --replace of a bad manifest changed the pod: %+v", s)
		}
	}
}

// An installed pod whose graph fails to start (its init app fails the
// first time) is run again by systemd, and then runs.
func TestPodInstallRestartsFailedStart(t *testing.T) {
	ctx := context.Background()
	podsDir, stateDir := filepath.Join(t.TempDir(), "pods"), t.TempDir()
	flags := []string{"--pods-dir", podsDir, "--unit-dir", systemdtest.RuntimeUnitDir(t), "--state-dir", stateDir, "--runtime"}
	count := filepath.Join(t.TempDir(), "count")
	manifest := manifestFile(t, fmt.Sprintf(`name: retried
apps:
  - {name: init, init: true, exec: [/bin/sh, -c, 'echo x >> %s; test $(wc -l < %[1]s) -ge 2']}
  - {name: a, exec: [/bin/sleep, 600]}
`, count))
	if out, errs, code := unitrun(t, append([]string{"pod", "install", manifest}, flags...)...); code != 0 {
		t.Fatalf("pod install: exit %d, %q, %q", code, out, errs)
	}
	defer func() {
		if _, errs, code := unitrun(t, append([]string{"pod", "uninstall", "retried"}, flags...)...); code != 0 {
			t.Errorf("pod uninstall: exit %d, %q", code, errs)
		}
	}()
	conn := systemdtest.Conn(t)
	if err := conn.RunJob(ctx, "unitrun-pod@retried.service", conn.StartUnit); err == nil {
		t.Fatal("the first start of the pod's unit succeeded; want it failed with the init app")
	}
	for i := 0; ; i++ {
		s, code := podStatusOn(t, nil, stateDir, "retried")
		if code == 0 && s.Phase == "Running" && len(s.Apps) == 2 && s.Apps[1].State == "running" {
			break
		}
		if i == 600 {
			t.Fatalf("the pod after its unit's failed start: %+v, exit %d; want it run again, running", s, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if data, _ := os.ReadFile(count); string(data) != "x\nx\n" {
		t.Errorf("the init app ran %q times; want twice", data)
	}
}

// In a state directory that outlives its manager (a persistent one, as
// /var/lib/unitrun/pods is across a reboot), the statuses of the pods
// that ran before the manager was stopped stay readable once it has booted
// again: a pod that had ended as it had ended, one that was running as
// the stop ended it, every exit recorded.
func TestPodStatusesSurviveRestart(t *testing.T) {
	ctx := context.Background()
	e, env := bootManager(t)
	stateDir := t.TempDir()
	if _, errs, code := unitrunEnv(t, env, "pod", "run", "-q", "--state-dir", stateDir, manifestFile(t, "name: ended\napps: [{name: a, exec: [/bin/sh, -c, 'exit 3']}]\n")); code != 3 {
		t.Fatalf("pod run ended: exit %d, %q; want 3", code, errs)
	}
	if _, errs, code := unitrunEnv(t, env, "pod", "run", "--detach", "--state-dir", stateDir, manifestFile(t, "name: running\napps: [{name: a, exec: [/bin/sleep, 600]}]\n")); code != 0 {
		t.Fatalf("pod run running: exit %d, %q", code, errs)
	}
	if err := e.Stop(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	defer unitrunEnv(t, env, "pod", "rm", "--force", "--state-dir", stateDir, "running")
	defer unitrunEnv(t, env, "pod", "rm", "--force", "--state-dir", stateDir, "ended")
	if s, code := podStatusOn(t, env, stateDir, "ended"); code != 0 || s.Phase != "Failed" || s.ExitCode == nil || *s.ExitCode != 3 || s.Apps[0].ExitCode == nil || *s.Apps[0].ExitCode != 3 {
		t.Errorf("pod ended after the restart: %+v, exit %d; want Failed with exit code 3, as it ended", s, code)
	}
	if s, code := podStatusOn(t, env, stateDir, "running"); code != 0 || s.Phase == "Running" || s.Apps[0].State == "running" || s.Apps[0].Signal != "TERM" || s.Apps[0].FinishedAt == nil {
		t.Errorf("pod running after the restart: %+v, exit %d; want it ended, its app by the stop's SIGTERM", s, code)
	}
}

// pod install --now of a pod that fails to start (its init app fails,
// each time) exits 125 once the unit's first run has failed, naming the
// unit and where to see why, instead of waiting through every run the
// unit's Restart= makes; it takes the install back: no manifest, unit
// file or enabled unit is left, and the pod's status tells the failure.
func TestPodInstallNowFailedStart(t *testing.T) {
	ctx := context.Background()
	podsDir, stateDir := filepath.Join(t.TempDir(), "pods"), t.TempDir()
	unitDir := systemdtest.RuntimeUnitDir(t)
	flags := []string{"--pods-dir", podsDir, "--unit-dir", unitDir, "--state-dir", stateDir, "--runtime"}
	manifest := manifestFile(t, `name: neverup
apps:
  - {name: init, init: true, exec: [/bin/sh, -c, 'exit 3']}
  - {name: a, exec: [/bin/sleep, 600]}
`)
	defer unitrun(t, "pod", "rm", "--force", "--state-dir", stateDir, "neverup")
	out, errs, code := unitrun(t, append([]string{"pod", "install", "--now", manifest}, flags...)...)
	want := "unitrun-pod@neverup.service: failed; unitrun pod status --state-dir " + stateDir + " neverup says why"
	if code != exitFailed || out != "" || !strings.Contains(errs, want) {
		t.Errorf("pod install --now of a pod that fails to start: exit %d, %q, %q; want 125 with %q", code, out, errs, want)
	}
	for _, p := range []string{filepath.Join(podsDir, "neverup.yaml"), filepath.Join(unitDir, "unitrun-pod@.service")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("a failed pod install --now left %s: %v", p, err)
		}
	}
	conn := systemdtest.Conn(t)
	if state, err := conn.UnitFileState(ctx, "unitrun-pod@neverup.service"); err == nil && state != "" {
		t.Errorf("unitrun-pod@neverup.service after a failed install: unit file state %q", state)
	}
	if s, code := podStatusOn(t, nil, stateDir, "neverup"); code != 0 || s.Phase != "Failed" {
		t.Errorf("the pod after a failed install: %+v, exit %d; want it Failed", s, code)
	}
}

// pod uninstall of a pod whose unit is still starting (its init app
// runs) stops the start, which fails the unit, and leaves no unit loaded,
// failed or not.
func TestPodUninstallWhileStarting(t *testing.T) {
	ctx := context.Background()
	podsDir, stateDir := filepath.Join(t.TempDir(), "pods"), t.TempDir()
	flags := []string{"--pods-dir", podsDir, "--unit-dir", systemdtest.RuntimeUnitDir(t), "--state-dir", stateDir, "--runtime"}
	manifest := manifestFile(t, `name: starting
apps:
  - {name: init, init: true, exec: [/bin/sleep, 600]}
  - {name: a, exec: [/bin/sleep, 600]}
`)
	if out, errs, code := unitrun(t, append([]string{"pod", "install", manifest}, flags...)...); code != 0 {
		t.Fatalf("pod install: exit %d, %q, %q", code, out, errs)
	}
	conn := systemdtest.Conn(t)
	if _, err := conn.StartUnit(ctx, "unitrun-pod@starting.service", "replace"); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		s, code := podStatusOn(t, nil, stateDir, "starting")
		if code == 0 && len(s.Apps) == 2 && s.Apps[0].State == "running" {
			break
		}
		if i == 600 {
			t.Fatalf("the pod as its unit starts: %+v, exit %d; want its init app running", s, code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, errs, code := unitrun(t, append([]string{"pod", "uninstall", "starting"}, flags...)...); code != 0 || out != "" {
		t.Fatalf("pod uninstall: exit %d, %q, %q", code, out, errs)
	}
	if loaded, err := conn.Loaded(ctx, "unitrun-pod@starting.service"); err != nil || loaded {
		t.Errorf("after pod uninstall, unitrun-pod@starting.service loaded: %v, %v; want it gone", loaded, err)
	}
}

// pod install pulls the manifest's images into --image-dir as pod create
// does: a tag the registry lacks is refused with pod create's exit 2 and
// words, before anything is written. The unit it installs starts after
// network-online.target and runs pod run on that store (--image-dir, as
// systemd reads the quoted path of a space and a '%'): its command, run
// twice as two boots run it, replaces the pod from the store alone (the
// registry refuses every request by then), and leaves the image leased to
// the pod, so that image rm refuses it.
func TestPodInstallImage(t *testing.T) {
	ctx := context.Background()
	reg := imagetest.NewRegistry(t)
	ref := pushToolImage(t, reg, "boot:1", "sleep", "600")
	podsDir, stateDir := filepath.Join(t.TempDir(), "pods"), t.TempDir()
	images := filepath.Join(t.TempDir(), "store 100%")
	common := []string{"--pods-dir", podsDir, "--unit-dir", systemdtest.RuntimeUnitDir(t), "--state-dir", stateDir, "--runtime"}
	flags := append([]string{"--image-dir", images}, common...)
	manifest := func(ref string) string {
		return manifestFile(t, "name: boot\nisolation: namespaces\napps:\n  - {name: a, image: \""+ref+"\"}\n")
	}

	nosuch := manifest(reg.Host + "/boot:nosuch")
	_, createErrs, createCode := podCLI(t, stateDir, "create", "--image-dir", images, nosuch)
	_, errs, code := unitrun(t, append([]string{"pod", "install", nosuch}, flags...)...)
	if code != exitUsage || errs != createErrs || createCode != exitUsage || !strings.Contains(errs, `apps[0].image "`+reg.Host+`/boot:nosuch"`) {
		t.Errorf("pod install of a tag the registry lacks: exit %d, %q; want pod create's exit %d, %q, naming the field", code, errs, createCode, createErrs)
	}
	if _, errs, code := unitrun(t, "pod", "install", "--image-dir", "store", manifest(ref)); code != exitUsage || !strings.Contains(errs, `--image-dir "store": must be an absolute path`) {
		t.Errorf("pod install --image-dir store: exit %d, %q; want 2 naming the flag", code, errs)
	}
	file := manifest(ref)
	if _, errs, code := unitrun(t, append([]string{"pod", "install", "--image-dir", file, file}, common...)...); code != exitUsage || errs != "unitrun: --image-dir "+file+": must be a directory, and it or one above it is a file\n" {
		t.Errorf("pod install --image-dir FILE: exit %d, %q; want 2 naming the flag", code, errs)
	}
	if _, err := os.Stat(podsDir); !os.IsNotExist(err) {
		t.Errorf("the refused pod install left %s: %v", podsDir, err)
	}

	if _, errs, code := unitrun(t, append([]string{"pod", "install", manifest(ref)}, flags...)...); code != 0 {
		t.Fatalf("pod install: exit %d, %q", code, errs)
	}
	s, err := image.Open(images)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, errs, code := unitrun(t, append([]string{"pod", "uninstall", "boot"}, common...)...); code != 0 {
			t.Errorf("pod uninstall: exit %d, %q", code, errs)
		}
		if _, err := s.Remove(ref); err != nil {
			t.Errorf("image rm after pod uninstall: %v; want the lease released", err)
		}
	}()
	if _, err := s.Lookup(ref); err != nil {
		t.Errorf("the image after pod install: %v; want it pulled into --image-dir", err)
	}

	conn := systemdtest.Conn(t)
	const instance = "unitrun-pod@boot.service"
	u, err := conn.Properties(ctx, instance, manager.UnitIface, "After", "Wants")
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range []string{"After", "Wants"} {
		if units, _ := u[dep].Value().([]string); !slices.Contains(units, "network-online.target") {
			t.Errorf("%s's %s=: %q; want network-online.target", instance, dep, units)
		}
	}
	svc, err := conn.Properties(ctx, instance, manager.ServiceIface, "ExecStart", "WorkingDirectory")
	if err != nil {
		t.Fatal(err)
	}
	cmds, _ := svc["ExecStart"].Value().([][]any)
	if len(cmds) != 1 || len(cmds[0]) < 2 {
		t.Fatalf("%s's ExecStart=: %v", instance, cmds)
	}
	argv, _ := cmds[0][1].([]string)
	if i := slices.Index(argv, "--image-dir"); i < 0 || i+1 == len(argv) || argv[i+1] != images {
		t.Fatalf("%s runs %q; want --image-dir %q", instance, argv, images)
	}
	reg.SetWrap(func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
		http.Error(w, "the network is down", http.StatusServiceUnavailable)
	})
	var started []time.Time
	for boot := range 2 {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, _ = svc["WorkingDirectory"].Value().(string)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("boot %d: %s: %v: %s", boot+1, argv, err, out)
		}
		st, code := podStatusOn(t, nil, stateDir, "boot")
		if code != 0 || st.Phase != "Running" || st.StartedAt == nil {
			t.Fatalf("boot %d: the pod %+v, exit %d; want it running", boot+1, st, code)
		}
		started = append(started, *st.StartedAt)
		_, err := s.Remove(ref)
		if inUse := (*image.InUseError)(nil); !errors.As(err, &inUse) || !slices.Contains(inUse.Holders, "pod/boot") {
			t.Errorf("boot %d: image rm of the pod's image: %v; want it in use by pod/boot", boot+1, err)
		}
	}
	if !started[1].After(started[0]) {
		t.Errorf("the second boot's pod started %v, the first's %v; want it replaced", started[1], started[0])
	}
}

// pod install leases the manifest's images to the pod as pod create
// does, from the install on: before the pod's first start, image prune
// keeps them and image rm is refused naming the pod; pod uninstall of
// the pod never started drops the leases. A pod install refused after
// the pull (a --unit-dir the manager does not read) leases nothing.
func TestPodInstallLeasesImages(t *testing.T) {
	reg := imagetest.NewRegistry(t)
	ref := pushToolImage(t, reg, "leased:1", "sleep", "600")
	podsDir, stateDir, images := filepath.Join(t.TempDir(), "pods"), t.TempDir(), t.TempDir()
	flags := []string{"--pods-dir", podsDir, "--unit-dir", systemdtest.RuntimeUnitDir(t), "--state-dir", stateDir, "--image-dir", images, "--runtime"}
	file := manifestFile(t, "name: leased\nisolation: namespaces\napps:\n  - {name: a, image: \""+ref+"\"}\n")

	if _, errs, code := unitrun(t, "pod", "install", "--pods-dir", podsDir, "--unit-dir", t.TempDir(), "--state-dir", stateDir, "--image-dir", images, file); code != exitUsage {
		t.Fatalf("pod install --unit-dir the manager does not read: exit %d, %q; want 2", code, errs)
	}
	if out, errs, code := unitrun(t, "image", "rm", "--image-dir", images, ref); code != 0 || !strings.HasPrefix(out, "removed sha256:") {
		t.Fatalf("image rm after a refused pod install: exit %d, %q, %q; want it removed, not leased", code, out, errs)
	}

	if _, errs, code := unitrun(t, append([]string{"pod", "install", file}, flags...)...); code != 0 {
		t.Fatalf("pod install: exit %d, %q", code, errs)
	}
	t.Cleanup(func() { unitrun(t, append([]string{"pod", "uninstall", "leased"}, flags...)...) })
	if out, errs, code := unitrun(t, "image", "prune", "--image-dir", images); code != 0 || strings.Contains(out, "sha256:") {
		t.Fatalf("image prune after pod install: exit %d, %q, %q; want the pod's image kept", code, out, errs)
	}
	want := "unitrun: " + ref + " is in use by pod leased: remove the pod first (unitrun pod rm leased, or unitrun pod uninstall leased if it is installed)\n"
	if out, errs, code := unitrun(t, "image", "rm", "--image-dir", images, ref); code != 125 || errs != want {
		t.Errorf("image rm of the installed pod's image: exit %d, %q, %q; want 125, %q", code, out, errs, want)
	}

	if _, errs, code := unitrun(t, append([]string{"pod", "uninstall", "leased"}, flags...)...); code != 0 {
		t.Fatalf("pod uninstall: exit %d, %q", code, errs)
	}
	if out, errs, code := unitrun(t, "image", "rm", "--image-dir", images, ref); code != 0 || !strings.HasPrefix(out, "removed sha256:") {
		t.Errorf("image rm after pod uninstall: exit %d, %q, %q; want the lease dropped", code, out, errs)
	}
}
