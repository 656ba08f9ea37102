package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	hostconfig "github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

func TestMain(m *testing.M) { systemdtest.Main(m) }

const config = `
[[op]]
name = "hello"
exec = ["/bin/sh", "-c", "echo hello from the host: \"$1\"; exit 3", "sh"]
args = { max = 1, pattern = "^[a-z ]+$" }
allow_uids = [0]
`

// The agent, run as it runs in a pod (own namespaces, no network, only the
// daemon's socket), calls the host's op and exits with its status; an agent
// of another uid is refused by the daemon.
func TestAgentInAContainer(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	agent := filepath.Join(dir, "node-agent")
	if out, err := exec.Command("go", "build", "-o", agent, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	api := systemdtest.StartDaemon(t, config).API
	// Let any uid reach the socket, so the daemon's own check decides.
	os.Chmod(api, 0o666)

	var out, errb bytes.Buffer
	c := systemdtest.Caller(api, 0, 0, agent, "hello", "from a pod")
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("agent as root: %v, want exit 3\nstderr: %s", err, errb.String())
	}
	if out.String() != "hello from the host: from a pod\n" {
		t.Errorf("agent printed %q", out.String())
	}
	if !strings.Contains(errb.String(), "hello") || !strings.Contains(errb.String(), "failed") {
		t.Errorf("agent summary %q", errb.String())
	}

	out.Reset()
	errb.Reset()
	c = systemdtest.Caller(api, 65534, 65534, agent, "hello", "x")
	c.Stdout, c.Stderr = &out, &errb
	err = c.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "(unauthorized)") {
		t.Errorf("agent as uid 65534: %v, stderr %q; want the daemon's unauthorized error", err, errb.String())
	}
}

// The shipped examples are consistent: ops.toml loads, and the DaemonSet
// mounts the socket that dist/systemd/unitrun.socket listens on.
func TestShippedExamples(t *testing.T) {
	if _, err := hostconfig.Load("../ops.toml", ""); err != nil {
		t.Errorf("ops.toml: %v", err)
	}
	b, err := os.ReadFile("../daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var ds struct {
		Kind string
		Spec struct {
			Template struct {
				Spec struct {
					Volumes []struct {
						HostPath struct{ Path, Type string } `yaml:"hostPath"`
					}
				}
			}
		}
	}
	if err := dec.Decode(&ds); err != nil || ds.Kind != "DaemonSet" {
		t.Fatalf("daemonset.yaml: kind %q, %v", ds.Kind, err)
	}
	sock, err := os.ReadFile("../../../dist/systemd/unitrun.socket")
	if err != nil {
		t.Fatal(err)
	}
	vols := ds.Spec.Template.Spec.Volumes
	if len(vols) != 1 || vols[0].HostPath.Type != "Socket" || !strings.Contains(string(sock), "ListenStream="+vols[0].HostPath.Path+"\n") {
		t.Errorf("the DaemonSet mounts %+v, not the socket unitrun.socket listens on", vols)
	}
}
