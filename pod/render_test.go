package pod

import (
	"strings"
	"testing"
)

// goldenOptions render the golden files.
var goldenOptions = RenderOptions{
	Binary:   "/usr/local/bin/unitrun",
	Hook:     "/usr/local/bin/unitrun-hook",
	StateDir: "/run/unitrun",
	Manager:  "user",
}

var renderCases = []struct {
	manifest string
	options  RenderOptions
}{
	{"two-apps.yaml", goldenOptions},
	{"init-restart.yaml", goldenOptions},
	{"probes.yaml", goldenOptions},
	{"sidecars.yaml", goldenOptions},
	{"init-retried.yaml", goldenOptions},
	{"hooks.yaml", goldenOptions},
	{"nasty.yaml", RenderOptions{
		Binary:   "/opt/unit run/bin/%unitrun",
		Hook:     "/opt/unit run/bin/%unitrun-hook",
		StateDir: "/run/state dir/$HOME/%h",
		Manager:  `private:/run/a "b"/private`,
		LogPath:  func(app string) string { return "/var/log/unitrun %h/" + app + ".log" },
	}},
}

func TestGraphGolden(t *testing.T) {
	for _, c := range renderCases {
		t.Run(c.manifest, func(t *testing.T) {
			files, err := Graph(mustLoad(t, c.manifest), c.options)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(c.manifest, ".yaml")+".units", archive(files))
		})
	}
}

func TestGraphOptions(t *testing.T) {
	m := mustLoad(t, "two-apps.yaml")
	files, err := Graph(m, RenderOptions{
		Binary:   "/usr/bin/unitrun",
		StateDir: "/run/unitrun",
		LogPath: func(app string) string {
			if app == "server" {
				return "/var/log/server.log"
			}
			return ""
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	all := string(archive(files))
	for _, want := range []string{
		`ExecStop="/usr/bin/unitrun" "pod" "unit-hook" "shutdown" "--state-dir" "/run/unitrun" "web"` + "\n",
		"StandardOutput=append:/var/log/server.log\n",
		"StandardOutput=journal\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("graph lacks %q", want)
		}
	}
	if strings.Contains(all, "--manager") {
		t.Error("graph passes --manager although RenderOptions.Manager is empty")
	}
}

func TestGraphErrors(t *testing.T) {
	m := mustLoad(t, "two-apps.yaml")
	for _, c := range []struct {
		name string
		o    RenderOptions
		err  string
	}{
		{"relative binary", RenderOptions{Binary: "unitrun", StateDir: "/run/unitrun"}, `RenderOptions.Binary "unitrun": must be an absolute path`},
		{"$ in binary", RenderOptions{Binary: "/opt/$x/unitrun", StateDir: "/run/unitrun"}, `character '$' not allowed`},
		{"relative hook", RenderOptions{Binary: "/bin/unitrun", Hook: "unitrun-hook", StateDir: "/run/unitrun"}, `RenderOptions.Hook "unitrun-hook": must be an absolute path`},
		{"relative state dir", RenderOptions{Binary: "/bin/unitrun", StateDir: "run"}, `RenderOptions.StateDir "run": must be a clean absolute path`},
		{"unclean state dir", RenderOptions{Binary: "/bin/unitrun", StateDir: "/run/"}, `RenderOptions.StateDir "/run/": must be a clean absolute path`},
		{"relative log", RenderOptions{Binary: "/bin/unitrun", StateDir: "/run", LogPath: func(string) string { return "log" }},
			`unitrun-pod-web-server.service: RenderOptions.LogPath("server") "log": must be a clean absolute path`},
		{"newline in log", RenderOptions{Binary: "/bin/unitrun", StateDir: "/run", LogPath: func(string) string { return "/a\nb" }},
			`RenderOptions.LogPath("server") "/a\nb": must be a clean absolute path`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Graph(m, c.o)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Graph error = %v, want one with %q", err, c.err)
			}
		})
	}
	bad := *m
	bad.Apps = nil
	if _, err := Graph(&bad, goldenOptions); err == nil {
		t.Error("Graph rendered a manifest without apps")
	}
}
