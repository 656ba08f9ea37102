package pod

import (
	"strings"
	"testing"

	"github.com/unitrun/unitrun/pod/record"
)

func TestUnitNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{SliceUnit("web"), "unitrun-pod-web.slice"},
		{TargetUnit("web"), "unitrun-pod-web.target"},
		{AppUnit("web", "server"), "unitrun-pod-web-server.service"},
		{reaperUnit("web", &App{Name: "server", RestartPolicy: record.OnFailure}), "unitrun-pod-web-server-reaper.service"},
		// The reaper of an app that never restarts runs no process.
		{reaperUnit("web", &App{Name: "server", RestartPolicy: record.Never}), "unitrun-pod-web-server-reaper.target"},
		{ShutdownUnit("web"), "unitrun-pod-web-shutdown.service"},
		// '-' is escaped, so that pod a-b's app c and pod a's app b-c
		// differ, and pod a-b's slice is not inside pod a's.
		{AppUnit("a-b", "c"), `unitrun-pod-a\x2db-c.service`},
		{AppUnit("a", "b-c"), `unitrun-pod-a-b\x2dc.service`},
		{SliceUnit("a-b"), `unitrun-pod-a\x2db.slice`},
		// App x-reaper is not app x's reaper.
		{AppUnit("p", "x-reaper"), `unitrun-pod-p-x\x2dreaper.service`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

// An app name may have the 63 characters of a Kubernetes container name;
// the longest unit name it forms with its pod's name must fit systemd's
// 255 characters, '-' escaped.
func TestAppNameLength(t *testing.T) {
	pod29 := "p-o-d-n-a-m-e-0-1-2-3-4-5-6-7" // 29 characters, 14 of them '-'
	label63 := strings.Repeat("abc-", 15) + "xyz"
	label55 := strings.Repeat("a-b-c-", 9) + "z"
	for _, c := range []struct {
		pod, app, err string
	}{
		{pod29, label55, ""},
		{pod29, label63, ""},
		{"web", strings.Repeat("a", 64), "must be 1 to 63 characters of a-z, 0-9 and -, starting with a letter or digit"},
		{pod29, "a" + strings.Repeat("-", 62), "more than systemd's 255"},
		{"web", "shutdown", "reserved for the pod's shutdown service"},
	} {
		err := CheckAppName(c.pod, c.app)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("CheckAppName(%q, %q) = %v, want %q", c.pod, c.app, err, c.err)
		}
		if err == nil {
			if u := reaperService(c.pod, c.app); len(u) > 255 {
				t.Errorf("%s: %d characters", u, len(u))
			}
			if err := CheckNames(c.pod, c.app); err != nil {
				t.Errorf("CheckNames(%q, %q) = %v", c.pod, c.app, err)
			}
		}
	}
	m := "name: web\napps: [{name: " + label63 + ", exec: [/bin/true]}]\n"
	if _, err := Parse([]byte(m)); err != nil {
		t.Errorf("a 63-character app name: %v", err)
	}
}

// record.AppUnit, which the small hook binary checks its unit against,
// names an app's service as AppUnit does.
func TestRecordAppUnit(t *testing.T) {
	for _, c := range [][2]string{{"p", "a"}, {"web-1", "ticker-x-2"}, {"0", "9-"}} {
		if got, want := record.AppUnit(c[0], c[1]), AppUnit(c[0], c[1]); got != want {
			t.Errorf("record.AppUnit(%q, %q) = %q, want %q", c[0], c[1], got, want)
		}
	}
}

// HookUnit names a unit of the pod's graph for every hook a unit runs.
func TestHookUnitInGraph(t *testing.T) {
	m, err := Parse([]byte("name: p\napps:\n  - name: a\n    restartPolicy: Always\n    exec: [/bin/true]\n    probe: {exec: [/bin/true]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]bool{ContainerUnit("p"): true}
	for _, n := range Nodes(m) {
		units[n.Name] = true
	}
	for _, h := range []string{record.HookStart, record.HookLogCopy, HookAwait, HookPostStart, HookPreStop, record.HookReapApp, record.HookEnd, HookReap, HookProbe, HookShutdown, HookContainer, HookContainerExited} {
		if u, ok := HookUnit(h, "p", "a"); !ok || !units[u] {
			t.Errorf("HookUnit(%q) = %q, %v: not a unit of the pod", h, u, ok)
		}
	}
}
