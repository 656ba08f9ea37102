package record

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

var (
	t0 = time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	t1 = t0.Add(time.Second)
)

func TestAppStatusValidation(t *testing.T) {
	for _, c := range []struct {
		json, err string
	}{
		{`{"name":"a","state":"running","restarts":0}`, ""},
		{`{"name":"a","state":"running","restarts":0,"extra":1}`, `unknown field "extra"`},
		{`{"name":"a","state":"running","restarts":0} {}`, "data after the JSON value"},
		{``, "empty"},
		{`{not json`, "not JSON: at byte 2 of 9"},
		{`{"name":"a","state":`, "not JSON: cut short after 20 bytes"},
		{`{"name":1,"state":"running","restarts":0}`, "field name holds a JSON number, not what unitrun writes there"},
		{`{"name":"A","state":"running","restarts":0}`, `name must be 1 to 63 characters of a-z, 0-9 and -, starting with a letter or digit`},
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
		// No words of Go's JSON decoder.
		if err != nil && regexp.MustCompile(`json:|invalid character|unmarshal|Go |unexpected end`).MatchString(err.Error()) {
			t.Errorf("parseApp(%s) = %v, in Go's words", c.json, err)
		}
	}
}

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

// isName accepts exactly the names that the patterns the errors name
// match.
func TestIsNameMatchesPatterns(t *testing.T) {
	names := []string{"", "a", "0", "-", "-a", "a-", "a--b", "A", "a_b", "a.b", "é", "a b", "web-1",
		strings.Repeat("a", 28), strings.Repeat("a", 29), strings.Repeat("a", 30),
		strings.Repeat("b", 62), strings.Repeat("b", 63), strings.Repeat("b", 64), "a\n"}
	for _, c := range []struct {
		pattern string
		max     int
	}{{PodNamePattern, maxPodName}, {AppNamePattern, maxAppName}} {
		re := regexp.MustCompile(c.pattern)
		for _, n := range names {
			if got, want := isName(n, c.max), re.MatchString(n); got != want {
				t.Errorf("isName(%q, %d) = %v; %s matches: %v", n, c.max, got, c.pattern, want)
			}
		}
	}
}

// FuzzParseAppStatus checks that what parseApp accepts it accepts again
// once written, unchanged.
func FuzzParseAppStatus(f *testing.F) {
	f.Add([]byte(`{"name":"server","state":"failed","exit_code":137,"signal":"KILL","result":"timeout","restarts":3,"backoff_ns":100,"started_at":"2025-01-02T03:04:05Z","finished_at":"2025-01-02T03:04:06+01:00","last_exit_at":"2025-01-02T03:04:06Z"}`))
	f.Add([]byte(`{"name":"a","state":"waiting","restarts":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, err := parseApp(data); err == nil {
			once, _ := json.Marshal(s)
			again, err := parseApp(once)
			if twice, _ := json.Marshal(again); err != nil || string(twice) != string(once) {
				t.Fatalf("accepted %s, then its encoding %s as %s, %v", data, once, twice, err)
			}
		}
	})
}
