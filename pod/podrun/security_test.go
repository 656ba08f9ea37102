package podrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
)

// hostileNames are pod or app names that would climb out of the state
// directory, name another unit, or break a unit file or a log line.
var hostileNames = []string{"../x", "..", ".", "a/b", "/etc", "A", "x\n", "x\nExecStart=/bin/true", "x%n", "x y", "x\\x2d", "-x", "x.service", strings.Repeat("a", 64), ""}

// TestSecurityPodNamesRefused creates pods with hostile pod and app names:
// Create refuses each naming the field, and writes neither state nor units.
func TestSecurityPodNamesRefused(t *testing.T) {
	r := newRunner(t)
	unitDir := systemdtest.RuntimeUnitDir(t)
	before, _ := os.ReadDir(unitDir)
	for _, name := range hostileNames {
		for _, tt := range []struct {
			field    string
			manifest map[string]any
		}{
			{"name", map[string]any{"name": name, "apps": []any{map[string]any{"name": "a", "exec": []string{"/bin/true"}}}}},
			{"apps[0].name", map[string]any{"name": "p", "apps": []any{map[string]any{"name": name, "exec": []string{"/bin/true"}}}}},
		} {
			data, _ := json.Marshal(tt.manifest)
			_, err := r.Create(context.Background(), data)
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("%s %q: Create: %v, want an error naming %s", tt.field, name, err, tt.field)
			}
			if invalid := (*InvalidError)(nil); !errors.As(err, &invalid) {
				t.Errorf("%s %q: Create: %T, want an *InvalidError (the CLI exits 2 for it)", tt.field, name, err)
			}
		}
	}
	if entries, _ := os.ReadDir(r.StateDir); len(entries) != 0 {
		t.Errorf("refused pods left %d entries in the state dir", len(entries))
	}
	if after, _ := os.ReadDir(unitDir); len(after) != len(before) {
		t.Errorf("refused pods changed the unit dir: %d entries, were %d", len(after), len(before))
	}
}

// TestSecurityPodStateTraversal calls every function that takes a pod or
// app name from outside (the command line, a hook's argv) with names that
// climb out of the state directory, where a pod-like tree is planted: each
// is refused and the planted tree is neither read nor changed.
func TestSecurityPodStateTraversal(t *testing.T) {
	r := newRunner(t)
	ctx := context.Background()
	// STATE/../victim/pods/v looks like a pod to a path that climbs out.
	victim := filepath.Join(filepath.Dir(r.StateDir), "victim")
	os.MkdirAll(filepath.Join(victim, "status"), 0o755)
	os.WriteFile(filepath.Join(victim, "status", "a"), []byte("7\n"), 0o644)
	os.WriteFile(filepath.Join(victim, "pod.json"), []byte(`{"name": "v", "phase": "Running", "exit_policy": "first-failure", "apps": []}`), 0o644)
	snapshot := func() string {
		var b strings.Builder
		filepath.Walk(victim, func(p string, fi os.FileInfo, err error) error {
			data, _ := os.ReadFile(p)
			b.WriteString(p + ":" + string(data) + "\n")
			return nil
		})
		return b.String()
	}
	was := snapshot()
	for _, podName := range []string{"../victim", "../../" + filepath.Base(filepath.Dir(r.StateDir)) + "/victim", "/etc", ".."} {
		calls := map[string]error{}
		_, calls["ReadExitCode"] = record.ReadExitCode(r.StateDir, podName, "a")
		calls["WriteExitCode"] = record.WriteExitCode(r.StateDir, podName, "a", 1)
		calls["WriteExitCode app"] = record.WriteExitCode(r.StateDir, "p", "../../../victim/status/a", 1)
		_, calls["ReadApp"] = record.ReadApp(r.StateDir, podName, "a")
		calls["WriteApp"] = record.WriteApp(r.StateDir, podName, record.AppStatus{Name: "a", State: record.AppRunning})
		_, calls["ReadPod"] = pod.ReadPod(r.StateDir, podName)
		calls["WritePod"] = pod.WritePod(r.StateDir, pod.PodStatus{Name: podName, Phase: pod.PodPending, ExitPolicy: record.FirstFailure})
		_, calls["Status"] = r.Status(ctx, podName)
		_, calls["Manifest"] = r.Manifest(podName)
		calls["Start"] = r.Start(ctx, podName, "")
		_, calls["Stop"] = r.Stop(ctx, podName, time.Second)
		calls["Remove"] = r.Remove(ctx, podName, true)
		calls["Logs"] = pod.Logs(ctx, r.StateDir, podName, []string{"a"}, &bytes.Buffer{}, pod.LogOptions{}, nil)
		calls["WaitBackoff"] = appexec.WaitBackoff(ctx, r.StateDir, podName, "a")
		calls["Reap"] = Reap(r.StateDir, podName, "a")
		for name, err := range calls {
			if err == nil {
				t.Errorf("%s(%q): succeeded, want a refusal", name, podName)
			}
		}
	}
	if now := snapshot(); now != was {
		t.Errorf("the tree outside the state dir changed:\n%s\nwas:\n%s", now, was)
	}
}

// TestSecurityStatusSymlinks plants symlinks to a directory outside the
// state directory where the hooks write: the pod's directory and its
// status and apps directories. Every write is refused and the outside
// directory stays empty.
func TestSecurityStatusSymlinks(t *testing.T) {
	writes := map[string]func(state string) error{
		"WriteExitCode": func(state string) error { return record.WriteExitCode(state, "web", "server", 3) },
		"WriteApp": func(state string) error {
			return record.WriteApp(state, "web", record.AppStatus{Name: "server", State: record.AppRunning})
		},
		"WritePod": func(state string) error {
			return pod.WritePod(state, pod.PodStatus{Name: "web", Phase: pod.PodPending, ExitPolicy: record.FirstFailure})
		},
		"markStopping": func(state string) error { return record.MarkStopping(state, "web") },
	}
	// Each symlink and the writes whose path goes through it.
	for at, through := range map[string][]string{
		"pods":            {"WriteExitCode", "WriteApp", "WritePod", "markStopping"},
		"pods/web":        {"WriteExitCode", "WriteApp", "WritePod", "markStopping"},
		"pods/web/status": {"WriteExitCode"},
		"pods/web/apps":   {"WriteApp"},
	} {
		t.Run(strings.ReplaceAll(at, "/", "_"), func(t *testing.T) {
			state, outside := t.TempDir(), t.TempDir()
			link := filepath.Join(state, at)
			os.MkdirAll(filepath.Dir(link), 0o755)
			if err := os.Symlink(outside, link); err != nil {
				t.Fatal(err)
			}
			for _, name := range through {
				if err := writes[name](state); err == nil || !strings.Contains(err.Error(), "is a symlink") {
					t.Errorf("%s through a symlinked %s: %v, want a refusal naming the symlink", name, at, err)
				}
			}
			var found []string
			filepath.Walk(outside, func(p string, fi os.FileInfo, err error) error {
				if p != outside {
					found = append(found, p)
				}
				return nil
			})
			if len(found) != 0 {
				t.Errorf("written outside the state dir: %v", found)
			}
		})
	}
}

// TestSecurityPodHostileStrings renders and runs a pod whose argv, probe
// argv, environment values and working directory hold hostile strings:
// systemd-analyze verify passes every unit for a system and a user
// manager, and after a daemon-reload mid-run the app receives every
// string exactly and no injected command runs.
func TestSecurityPodHostileStrings(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	words := systemdtest.Hostile(dir)
	wd := filepath.Join(dir, `wd %h %% $HOME ${X} 'q' "d" \b ; x`)
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	out, gate := filepath.Join(dir, "out"), filepath.Join(dir, "gate")
	env := map[string]string{}
	for i, w := range words {
		env["V"+string(rune('A'+i))] = w
	}
	script := `printf '%s\0' "$@" > ` + out + `.tmp; env -0 | grep -z '^V[A-Z]=' | LC_ALL=C sort -z >> ` + out + `.tmp; pwd >> ` + out + `.tmp; mv ` + out + `.tmp ` + out + `; while [ ! -e ` + gate + ` ]; do sleep 0.05; done`
	manifest, _ := json.Marshal(map[string]any{
		"name": "hostile",
		"apps": []map[string]any{{
			"name": "app", "exec": append([]string{"/bin/sh", "-c", script, "sh"}, words...),
			"env": env, "workingDir": wd,
			"probe": map[string]any{"exec": append([]string{"/bin/true"}, words...), "periodSeconds": 3600},
		}},
	})
	m, err := pod.Parse(manifest)
	if err != nil {
		t.Fatal(err)
	}
	files, err := pod.Graph(m, pod.RenderOptions{Binary: systemdtest.Binary(t), StateDir: r.StateDir, LogPath: func(app string) string { return pod.LogFile(r.StateDir, m.Name, app) }})
	if err != nil {
		t.Fatal(err)
	}
	units := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(units, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, user := range []bool{false, true} {
		if err := systemdtest.Analyze(t, units, user); err != nil {
			t.Errorf("user=%v: %v", user, err)
		}
	}

	name := run(t, r, string(manifest), "")
	got := waitFile(t, out)
	if err := r.Mgr.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gate, nil, 0o644)
	wantPod(t, wait(t, r, name), pod.PodSucceeded, 0)
	var want strings.Builder
	for _, w := range words {
		want.WriteString(w + "\x00")
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		want.WriteString(k + "=" + env[k] + "\x00")
	}
	want.WriteString(wd + "\n")
	if got != want.String() {
		t.Errorf("the app received\n%q\nwant\n%q", got, want.String())
	}
	systemdtest.NoPwned(t, dir)
}

// TestSecurityLogsSymlink plants an app's log file, then its times file,
// as a symlink to a file outside the pod: Logs refuses to open it and
// prints nothing of it.
func TestSecurityLogsSymlink(t *testing.T) {
	state := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("OUTSIDE SECRET\n"), 0o600)
	log := pod.LogFile(state, "web", "server")
	os.MkdirAll(filepath.Dir(log), 0o755)
	if err := os.Symlink(secret, log); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := pod.Logs(context.Background(), state, "web", []string{"server"}, &out, pod.LogOptions{Prefix: true}, nil); err == nil || strings.Contains(out.String(), "SECRET") {
		t.Errorf("Logs through a symlinked log file: %v, printed %q", err, out.String())
	}
	// A real log whose times file is a symlink: refused too.
	os.Remove(log)
	os.WriteFile(log, []byte("line\n"), 0o600)
	if err := os.Symlink(secret, logcopy.Times(log)); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := pod.Logs(context.Background(), state, "web", []string{"server"}, &out, pod.LogOptions{Timestamps: true}, nil); err == nil || strings.Contains(out.String()+err.Error(), "SECRET") {
		t.Errorf("Logs through a symlinked times file: %v, printed %q", err, out.String())
	}
}

// TestSecurityPodStateRootOnly runs a pod whose app has a secret in its
// env and prints it, and a second pod whose app, as user nobody, tries to
// read the first pod's manifest, spec and log: it cannot, the secret is in
// no unit file, and the first app still gets it. The pods' state directory
// is 0755, as /run/unitrun is.
func TestSecurityPodStateRootOnly(t *testing.T) {
	r := newRunner(t)
	// The state dir and its parent (t.TempDir's, 0700) open to all.
	for _, d := range []string{filepath.Dir(r.StateDir), r.StateDir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := run(t, r, "name: secret\napps:\n  - name: a\n    exec: [/bin/sh, -c, 'echo \"$DB_PASSWORD\"']\n    env: {DB_PASSWORD: hunter2}\n", "")
	wantPod(t, wait(t, r, secret), pod.PodSucceeded, 0)
	if log, err := os.ReadFile(pod.LogFile(r.StateDir, secret, "a")); err != nil || string(log) != "hunter2\n" {
		t.Errorf("app a printed %q (%v), want its env's secret", log, err)
	}
	dir := record.Dir(r.StateDir, secret)
	for i, f := range []string{"manifest.yaml", "manifest.json", "logs/a.log"} {
		reader := run(t, r, fmt.Sprintf("name: reader%d\n", i)+"apps:\n  - name: r\n    user: nobody\n    exec: [/bin/cat, "+strconv.Quote(filepath.Join(dir, f))+"]\n", "")
		if s := wait(t, r, reader); s.Phase != pod.PodFailed {
			t.Errorf("user nobody read %s: pod %s, want Failed", f, s.Phase)
		}
	}
	files, _ := filepath.Glob(filepath.Join(systemdtest.RuntimeUnitDir(t), "unitrun-pod-secret*"))
	for _, f := range files {
		if data, _ := os.ReadFile(f); bytes.Contains(data, []byte("hunter2")) {
			t.Errorf("unit file %s holds the secret", f)
		}
	}
}
