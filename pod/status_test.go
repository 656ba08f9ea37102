package pod

import (
	"encoding/json"
	"github.com/unitrun/unitrun/pod/record"
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

func TestPodStatusMergesApps(t *testing.T) {
	dir := t.TempDir()
	p := PodStatus{
		Name: "web", Phase: PodRunning, ExitPolicy: record.FirstFailure, CreatedAt: t0, StartedAt: t0,
		Apps: []record.AppStatus{{Name: "server", State: record.AppRunning, StartedAt: t0}, {Name: "warmup", State: record.AppWaiting}},
	}
	if err := WritePod(dir, p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPod(dir, "web")
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("ReadPod = %+v, %v; want %+v", got, err, p)
	}
	warm := record.AppStatus{Name: "warmup", State: record.AppExited, ExitCode: ptr(0), Result: "success", StartedAt: t0, FinishedAt: t1, LastExitAt: t1}
	if err := record.WriteApp(dir, "web", warm); err != nil {
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

func TestStatusValidation(t *testing.T) {
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

func FuzzParsePodStatus(f *testing.F) {
	f.Add([]byte(`{"name":"web","phase":"Failed","exit_code":4,"exit_policy":"first-failure","apps":[{"name":"a","state":"failed","exit_code":4,"restarts":0}],"created_at":"2025-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"name":"web","phase":"Pending","exit_policy":"any","apps":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, parsePod) })
}

// TestParseChoices reads the exit policy and isolation from a pod status,
// as the hooks do, and refuses a bad one naming its field; the apps are
// left unread.
func TestParseChoices(t *testing.T) {
	c, err := parseChoices([]byte(`{"name":"p","phase":"Running","exit_policy":"any","isolation":"namespaces","apps":[{"name":"a","state":"bogus"}]}`))
	if err != nil || c != (podChoices{ExitPolicy: record.AnyExit, Isolation: Namespaces}) {
		t.Errorf("parseChoices = %+v, %v", c, err)
	}
	for _, tt := range []struct{ data, want string }{
		{`{"exit_policy":"sometimes"}`, `exit_policy "sometimes": must be first-failure, any or all`},
		{`{"exit_policy":"all","isolation":"vm"}`, `isolation "vm": must be none or namespaces`},
		{`{"exit_policy":`, "not JSON: cut short after 15 bytes"},
		{`{"exit_policy":4}`, "field exit_policy holds a JSON number, not what unitrun writes there"},
	} {
		if _, err := parseChoices([]byte(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseChoices(%s) = %v, want an error containing %q", tt.data, err, tt.want)
		}
	}
}
