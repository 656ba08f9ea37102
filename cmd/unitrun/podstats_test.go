package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A pod with an app that burns CPU and one that holds 64 MiB: pod stats
// --json gives the burning app CPU time and a CPU % above 0, the other
// app at least 64 MiB of memory and the burning one less, every field
// of docs/pods.md in each app's object and the pod's total; the app
// units have every accounting on; pod top lists the burning app's
// process with its command; an unknown pod exits 1 and a bad --interval
// 2, naming the flag.
func TestPodStatsAndTop(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the test's app that holds memory is a python3 program")
	}
	dir, files := t.TempDir(), t.TempDir()
	rmPod(t, dir, "load")
	burnt, held := filepath.Join(files, "burnt"), filepath.Join(files, "held")
	burn := fmt.Sprintf(`i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo $$ > %s.new; mv %s.new %s; while :; do :; done`, burnt, burnt, burnt)
	hold := fmt.Sprintf(`import time; b = bytearray(b"x") * (64 << 20); open(%q, "w").close(); time.sleep(600)`, held)
	manifest := fmt.Sprintf("name: load\napps:\n- {name: burn, exec: [/bin/sh, -c, %q]}\n- {name: mem, exec: [%s, -c, %q]}\n", burn, python, hold)
	if _, errs, code := podCLI(t, dir, "run", "--detach", manifestFile(t, manifest)); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	waitFile(burnt)
	waitFile(held)
	pid, err := os.ReadFile(burnt)
	if err != nil {
		t.Fatal(err)
	}

	out, errs, code := podCLI(t, dir, "stats", "--json", "--interval", "500ms", "load")
	if code != 0 {
		t.Fatalf("pod stats --json: exit %d: %s", code, errs)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("pod stats --json printed %q, want one JSON object on one line (%v)", out, err)
	}
	for _, k := range []string{"pod", "at", "apps", "total"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("pod stats --json: no field %q in %s", k, out)
		}
	}
	var s struct {
		Apps []map[string]any `json:"apps"`
	}
	json.Unmarshal([]byte(out), &s)
	apps := map[string]map[string]any{}
	for _, a := range s.Apps {
		for _, k := range []string{"name", "unit", "source", "cpu_nsec", "cpu_percent", "memory_bytes", "tasks", "io_read_bytes", "io_write_bytes"} {
			if _, ok := a[k]; !ok {
				t.Errorf("pod stats --json: app %v has no field %q", a["name"], k)
			}
		}
		apps[fmt.Sprint(a["name"])] = a
	}
	num := func(app, field string) float64 {
		v, _ := apps[app][field].(float64)
		return v
	}
	if num("burn", "cpu_nsec") <= 0 || num("burn", "cpu_percent") <= 0 || num("burn", "tasks") < 1 {
		t.Errorf("pod stats: app burn %v: want CPU time, CPU %% and tasks above 0", apps["burn"])
	}
	if num("mem", "memory_bytes") < 64<<20 || num("burn", "memory_bytes") >= 64<<20 {
		t.Errorf("pod stats: memory of mem %.0f, of burn %.0f: want mem at least 64 MiB, burn less", num("mem", "memory_bytes"), num("burn", "memory_bytes"))
	}

	for _, u := range []string{"unitrun-pod-load-burn.service", "unitrun-pod-load-mem.service"} {
		props, err := exec.Command("systemctl", "--user", "show", "-p", "CPUAccounting,MemoryAccounting,TasksAccounting,IOAccounting", u).Output()
		if want := "CPUAccounting=yes\nIOAccounting=yes\nMemoryAccounting=yes\nTasksAccounting=yes\n"; err != nil || string(props) != want {
			t.Errorf("%s: %q (%v), want every accounting on", u, props, err)
		}
	}

	out, errs, code = podCLI(t, dir, "top", "load")
	want := strings.TrimSpace(string(pid)) + "\troot\t"
	found := false
	for line := range strings.Lines(out) {
		app, rest, _ := strings.Cut(line, "\t")
		if app == "burn" && strings.HasPrefix(rest, want) && strings.HasSuffix(rest, "\t/bin/sh -c "+burn+"\n") {
			found = true
		}
	}
	if code != 0 || !found {
		t.Errorf("pod top: exit %d, %q, %q; want a line: burn, pid %s, root, its time, its command", code, out, errs, strings.TrimSpace(string(pid)))
	}

	if _, errs, code := podCLI(t, dir, "stats", "nosuch"); code != 1 || !strings.Contains(errs, "no pod named nosuch") {
		t.Errorf("pod stats nosuch: exit %d, %q; want 1 and the pod named", code, errs)
	}
	if _, errs, code := podCLI(t, dir, "stats", "--interval", "0s", "load"); code != 2 || !strings.Contains(errs, "--interval ") {
		t.Errorf("pod stats --interval 0s: exit %d, %q; want 2 naming --interval", code, errs)
	}
}

// An isolated pod's apps run under its own systemd: pod stats accounts
// them together, as its container service on the host's manager (app "",
// the pod's systemd and apps among its tasks), and pod top lists that
// service's processes, the apps' commands among them, with app "-".
func TestPodStatsAndTopIsolated(t *testing.T) {
	dir := t.TempDir()
	rmPod(t, dir, "isostats")
	if _, errs, code := podCLI(t, dir, "run", "--detach", "--isolation", "namespaces", manifestFile(t, "name: isostats\napps: [{name: a, exec: [/bin/sleep, \"600\"]}]\n")); code != 0 {
		t.Fatalf("pod run --detach: exit %d: %s", code, errs)
	}
	var top string
	for range 300 { // until the app's command runs, 30 s at most
		out, errs, code := podCLI(t, dir, "top", "isostats")
		if code != 0 {
			t.Fatalf("pod top: exit %d: %s", code, errs)
		}
		if top = out; strings.Contains(top, "\t/bin/sleep 600\n") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(top, "-\t") || !strings.Contains(top, "\t/bin/sleep 600\n") {
		t.Errorf("pod top: %q; want the container's processes, app -, /bin/sleep 600 among them", top)
	}
	out, errs, code := podCLI(t, dir, "stats", "--json", "--interval", "100ms", "isostats")
	var s struct {
		Apps []struct {
			Name, Unit string
			Tasks      *uint64
		}
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 {
		t.Fatalf("pod stats --json: exit %d, %q (%s): %v", code, out, errs, err)
	}
	if len(s.Apps) != 1 || s.Apps[0].Name != "" || s.Apps[0].Unit != "unitrun-pod-isostats.service" || s.Apps[0].Tasks == nil || *s.Apps[0].Tasks < 2 {
		t.Errorf("pod stats --json: %s; want the container service alone, with its systemd's and the app's tasks", out)
	}
}
