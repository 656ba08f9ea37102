package pod

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var (
	t0 = time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	t1 = t0.Add(time.Second)
)

func TestExitCodeFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadExitCode(dir, "web", "server"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadExitCode before any exit = %v, want fs.ErrNotExist", err)
	}
	for _, code := range []int{0, 4, 143, 255} {
		if err := WriteExitCode(dir, "web", "server", code); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "pods", "web", "status", "server"))
		if err != nil || string(data) != strings.TrimSpace(string(data))+"\n" {
			t.Fatalf("status file = %q, %v", data, err)
		}
		got, err := ReadExitCode(dir, "web", "server")
		if err != nil || got != code {
			t.Errorf("ReadExitCode = %d, %v; want %d", got, err, code)
		}
	}
	if err := WriteExitCode(dir, "web", "server", 256); err == nil {
		t.Error("WriteExitCode accepted 256")
	}
	if err := WriteExitCode(dir, "web", "../x", 0); err == nil {
		t.Error("WriteExitCode accepted app ../x")
	}
	if _, err := ReadExitCode(dir, "..", "x"); err == nil {
		t.Error("ReadExitCode accepted pod ..")
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "pods", "web", "status"))
	if len(entries) != 1 {
		t.Errorf("status directory holds %v, want only the status file (no temporary files)", entries)
	}
}

func TestParseExitCode(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "0\n": 0, "7\n": 7, "255\n": 255} {
		if got, err := parseExitCode([]byte(in)); err != nil || got != want {
			t.Errorf("parseExitCode(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "\n", "256\n", "-1\n", "+1\n", "01\n", " 1\n", "1\n\n", "1 \n", "0x1\n", "1000\n"} {
		if got, err := parseExitCode([]byte(in)); err == nil {
			t.Errorf("parseExitCode(%q) = %d, want an error", in, got)
		}
	}
}

func TestAppStatusRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := AppStatus{
		Name: "server", State: AppRestarting, ExitCode: ptr(143), Signal: "TERM", Result: "success",
		Restarts: 2, Backoff: 20 * time.Second, StartedAt: t0, LastExitAt: t1,
	}
	if err := WriteApp(dir, "web", s); err != nil {
		t.Fatal(err)
	}
	got, err := ReadApp(dir, "web", "server")
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("ReadApp = %+v, %v; want %+v", got, err, s)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "pods", "web", "apps", "server.json"))
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "state", "exit_code", "signal", "result", "restarts", "backoff_ns", "started_at", "last_exit_at"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("apps/server.json lacks %q:\n%s", k, data)
		}
	}
	if _, ok := fields["finished_at"]; ok {
		t.Errorf("apps/server.json has finished_at while the app has not finished:\n%s", data)
	}
}

func TestPodStatusMergesApps(t *testing.T) {
	dir := t.TempDir()
	p := PodStatus{
		Name: "web", Phase: PodRunning, ExitPolicy: FirstFailure, CreatedAt: t0, StartedAt: t0,
		Apps: []AppStatus{{Name: "server", State: AppRunning, StartedAt: t0}, {Name: "warmup", State: AppWaiting}},
	}
	if err := WritePod(dir, p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPod(dir, "web")
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("ReadPod = %+v, %v; want %+v", got, err, p)
	}
	warm := AppStatus{Name: "warmup", State: AppExited, ExitCode: ptr(0), Result: "success", StartedAt: t0, FinishedAt: t1, LastExitAt: t1}
	if err := WriteApp(dir, "web", warm); err != nil {
		t.Fatal(err)
	}
	got, err = ReadPod(dir, "web")
	if err != nil || !reflect.DeepEqual(got.Apps[1], warm) || !reflect.DeepEqual(got.Apps[0], p.Apps[0]) {
		t.Errorf("ReadPod after warmup exited = %+v, %v", got.Apps, err)
	}
	var fields map[string]any
	data, _ := os.ReadFile(filepath.Join(dir, "pods", "web", "pod.json"))
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "phase", "exit_policy", "apps", "created_at", "started_at"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("pod.json lacks %q:\n%s", k, data)
		}
	}
	if _, ok := fields["exit_code"]; ok {
		t.Errorf("pod.json of a running pod has exit_code:\n%s", data)
	}
}

func TestReadRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := WriteExitCode(outside, "web", "server", 3); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pods"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A symlinked pod directory, inside or outside the state directory.
	if err := os.Symlink(filepath.Join(outside, "pods", "web"), filepath.Join(dir, "pods", "web")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadExitCode(dir, "web", "server"); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("ReadExitCode through a symlinked pod directory = %v", err)
	}
	// A symlinked status file.
	if err := WriteExitCode(dir, "db", "a", 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "pods", "db", "status", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadExitCode(dir, "db", "b"); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("ReadExitCode of a symlink = %v", err)
	}
	// A directory where a file belongs.
	if err := os.Mkdir(filepath.Join(dir, "pods", "db", "status", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadExitCode(dir, "db", "c"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadExitCode of a directory = %v", err)
	}
}

func TestStatusValidation(t *testing.T) {
	for _, c := range []struct {
		json, err string
	}{
		{`{"name":"a","state":"running","restarts":0}`, ""},
		{`{"name":"a","state":"running","restarts":0,"extra":1}`, `json: unknown field "extra"`},
		{`{"name":"a","state":"running","restarts":0} {}`, "data after the JSON value"},
		{`{"name":"A","state":"running","restarts":0}`, `name must match`},
		{`{"name":"a","state":"gone","restarts":0}`, `state "gone"`},
		{`{"name":"a","state":"exited","restarts":0}`, "state exited needs an exit_code"},
		{`{"name":"a","state":"failed","exit_code":256,"restarts":0}`, "exit_code 256"},
		{`{"name":"a","state":"failed","exit_code":1,"signal":"TERM","restarts":0}`, `signal "TERM"`},
		{`{"name":"a","state":"failed","exit_code":1,"result":"Bad","restarts":0}`, `result "Bad"`},
		{`{"name":"a","state":"running","restarts":-1}`, "restarts and backoff_ns must not be negative"},
	} {
		_, err := parseApp([]byte(c.json))
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("parseApp(%s) = %v, want %q", c.json, err, c.err)
		}
	}
	for _, c := range []struct {
		json, err string
	}{
		{`{"name":"p","phase":"Failed","exit_code":4,"exit_policy":"all","apps":[]}`, ""},
		{`{"name":"p","phase":"Running","exit_policy":"all","apps":null}`, ""},
		{`{"name":"p","phase":"Done","exit_policy":"all","apps":[]}`, `phase "Done"`},
		{`{"name":"p","phase":"Running","exit_code":0,"exit_policy":"all","apps":[]}`, "exit_code must be set exactly when the pod has ended"},
		{`{"name":"p","phase":"Failed","exit_policy":"all","apps":[]}`, "exit_code must be set exactly when the pod has ended"},
		{`{"name":"p","phase":"Succeeded","exit_code":1,"exit_policy":"all","apps":[]}`, "phase Succeeded does not go with exit_code 1"},
		{`{"name":"p","phase":"Failed","exit_code":0,"exit_policy":"all","apps":[]}`, "phase Failed does not go with exit_code 0"},
		{`{"name":"p","phase":"Running","exit_policy":"some","apps":[]}`, `exit_policy "some"`},
		{`{"name":"p","phase":"Running","exit_policy":"any","apps":[{"name":"a","state":"running","restarts":0},{"name":"a","state":"running","restarts":0}]}`, `app "a" listed twice`},
		{`{"name":"p","phase":"Running","exit_policy":"any","apps":[{"name":"a","state":"up","restarts":0}]}`, `state "up"`},
	} {
		_, err := parsePod([]byte(c.json))
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("parsePod(%s) = %v, want %q", c.json, err, c.err)
		}
	}
}

func FuzzParseExitCode(f *testing.F) {
	for _, s := range []string{"0\n", "255\n", "256", "-1", "01"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		code, err := parseExitCode(data)
		if err != nil {
			return
		}
		if code < 0 || code > 255 {
			t.Fatalf("parseExitCode(%q) = %d", data, code)
		}
		if again, err := parseExitCode([]byte(strings.TrimSuffix(string(data), "\n") + "\n")); err != nil || again != code {
			t.Fatalf("parseExitCode(%q) = %d, but with a newline %d, %v", data, code, again, err)
		}
	})
}

// roundTrip checks that what a parser accepts it accepts again once
// written, unchanged.
func roundTrip[T any](t *testing.T, data []byte, parse func([]byte) (T, error)) {
	v, err := parse(data)
	if err != nil {
		return
	}
	once, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	w, err := parse(once)
	if err != nil {
		t.Fatalf("accepted %s but not its re-encoding %s: %v", data, once, err)
	}
	twice, _ := json.Marshal(w)
	if string(once) != string(twice) {
		t.Fatalf("re-encoding changed: %s, then %s", once, twice)
	}
}

func FuzzParseAppStatus(f *testing.F) {
	f.Add([]byte(`{"name":"server","state":"failed","exit_code":137,"signal":"KILL","result":"timeout","restarts":3,"backoff_ns":100,"started_at":"2025-01-02T03:04:05Z","finished_at":"2025-01-02T03:04:06+01:00","last_exit_at":"2025-01-02T03:04:06Z"}`))
	f.Add([]byte(`{"name":"a","state":"waiting","restarts":0}`))
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, parseApp) })
}

func FuzzParsePodStatus(f *testing.F) {
	f.Add([]byte(`{"name":"web","phase":"Failed","exit_code":4,"exit_policy":"first-failure","apps":[{"name":"a","state":"failed","exit_code":4,"restarts":0}],"created_at":"2025-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"name":"web","phase":"Pending","exit_policy":"any","apps":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, parsePod) })
}

// TestReadAppWhileReplaced reads an app record while another goroutine
// keeps replacing it, as the hooks and the probe do while a pod runs:
// every read returns a whole record, none fails.
func TestReadAppWhileReplaced(t *testing.T) {
	dir := t.TempDir()
	rec := AppStatus{Name: "app", State: AppRunning}
	if err := WriteApp(dir, "p", rec); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			r := rec
			r.Restarts = n
			if err := WriteApp(dir, "p", r); err != nil {
				done <- err
				return
			}
		}
	}()
	for range 2000 {
		if got, err := ReadApp(dir, "p", "app"); err != nil || got.Name != "app" {
			t.Fatalf("ReadApp while the record is replaced: %+v, %v", got, err)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestParseChoices reads the exit policy and isolation from a pod status,
// as the hooks do, and refuses a bad one naming its field; the apps are
// left unread.
func TestParseChoices(t *testing.T) {
	c, err := parseChoices([]byte(`{"name":"p","phase":"Running","exit_policy":"any","isolation":"namespaces","apps":[{"name":"a","state":"bogus"}]}`))
	if err != nil || c != (podChoices{ExitPolicy: AnyExit, Isolation: Namespaces}) {
		t.Errorf("parseChoices = %+v, %v", c, err)
	}
	for _, tt := range []struct{ data, want string }{
		{`{"exit_policy":"sometimes"}`, `exit_policy "sometimes": must be first-failure, any or all`},
		{`{"exit_policy":"all","isolation":"vm"}`, `isolation "vm": must be none or namespaces`},
		{`{"exit_policy":`, "pod status: unexpected end of JSON input"},
	} {
		if _, err := parseChoices([]byte(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseChoices(%s) = %v, want an error containing %q", tt.data, err, tt.want)
		}
	}
}
