package pod

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit"
)

func ptr[T any](v T) *T { return &v }

func TestParseDefaults(t *testing.T) {
	m, err := Parse([]byte(`
name: web
restartPolicy: Always
apps:
  - name: prep
    init: true
    exec: [/bin/true]
  - name: server
    exec: ["/usr/bin/python3", "-m", "http.server", "8080"]
    env: {PYTHONUNBUFFERED: "1", N: 2}
    probe:
      http: {port: 8080}
  - name: once
    restartPolicy: Never
    exec: [/bin/true]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Manifest{
		Name:           "web",
		ExitPolicy:     record.FirstFailure,
		RestartPolicy:  record.Always,
		RestartBackoff: record.Backoff{Initial: 10 * time.Second, Max: 5 * time.Minute, Reset: 10 * time.Minute},
		Isolation:      NoIsolation,
		Network:        HostNetwork,
		Apps: []App{
			{Name: "prep", Init: true, Exec: []string{"/bin/true"}, RestartPolicy: record.Never},
			{
				Name:          "server",
				Exec:          []string{"/usr/bin/python3", "-m", "http.server", "8080"},
				Env:           map[string]string{"PYTHONUNBUFFERED": "1", "N": "2"},
				RestartPolicy: record.Always,
				Probe: &Probe{
					HTTP:             &HTTPProbe{Port: 8080, Path: "/", Status: StatusRange{200, 399}},
					PeriodSeconds:    10,
					TimeoutSeconds:   1,
					FailureThreshold: 3,
					Action:           record.RestartApp,
				},
			},
			{Name: "once", Exec: []string{"/bin/true"}, RestartPolicy: record.Never},
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", m, want)
	}
}

func TestParseEveryField(t *testing.T) {
	m, err := Parse([]byte(`
name: guarded
exitPolicy: any
restartPolicy: OnFailure
restartBackoff: {initial: 250ms, max: "1min 30s", reset: 1h}
isolation: namespaces
network: none
apps:
  - name: api
    exec: [/usr/local/bin/api, --port, "8080"]
    env: {A: "1"}
    workingDir: /srv/api
    user: api
    group: "1000"
    restartPolicy: Always
    successExitCodes: [0, 3, 255]
    stopTimeout: 20
    rootfs: /var/lib/images/api
    resources: {memory: 1.5G, cpuWeight: 10000, tasks: 1}
    probe:
      exec: [/usr/bin/curl, -f, localhost:8080]
      initialDelaySeconds: 1
      periodSeconds: 2
      timeoutSeconds: 3
      failureThreshold: 4
      action: fail-pod
  - name: tcp
    exec: [/bin/sleep, "1"]
    probe: {tcp: {port: 65535}}
  - name: web
    exec: [/bin/sleep, "1"]
    probe: {http: {port: 1, path: /healthz, status: 204}}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := App{
		Name:             "api",
		Exec:             []string{"/usr/local/bin/api", "--port", "8080"},
		Env:              map[string]string{"A": "1"},
		WorkingDir:       "/srv/api",
		User:             "api",
		Group:            "1000",
		RestartPolicy:    record.Always,
		SuccessExitCodes: []int{0, 3, 255},
		StopTimeout:      20 * time.Second,
		Rootfs:           "/var/lib/images/api",
		Resources:        Resources{Memory: "1.5G", CPUWeight: ptr(10000), Tasks: ptr(1)},
		Probe: &Probe{
			Exec:                []string{"/usr/bin/curl", "-f", "localhost:8080"},
			InitialDelaySeconds: 1,
			PeriodSeconds:       2,
			TimeoutSeconds:      3,
			FailureThreshold:    4,
			Action:              record.FailPod,
		},
	}
	if !reflect.DeepEqual(m.Apps[0], want) {
		t.Errorf("apps[0] =\n%+v\nwant\n%+v", m.Apps[0], want)
	}
	if b := m.RestartBackoff; b != (record.Backoff{Initial: 250 * time.Millisecond, Max: 90 * time.Second, Reset: time.Hour}) {
		t.Errorf("restartBackoff = %+v", b)
	}
	if m.ExitPolicy != record.AnyExit || m.Isolation != Namespaces || m.Network != NoNetwork || m.RestartPolicy != record.OnFailure {
		t.Errorf("pod fields = %+v", m)
	}
	if got := m.Apps[1].Probe.TCP.Port; got != 65535 {
		t.Errorf("apps[1].probe.tcp.port = %d", got)
	}
	if got := *m.Apps[2].Probe.HTTP; got != (HTTPProbe{Port: 1, Path: "/healthz", Status: StatusRange{204, 204}}) {
		t.Errorf("apps[2].probe.http = %+v", got)
	}
}

// TestParseErrors checks that each bad manifest is refused with an error
// that names the field and the rule.
func TestParseErrors(t *testing.T) {
	const app = "apps: [{name: a, exec: [/bin/true]}]\n"
	long := strings.Repeat("a", 30)
	for _, c := range []struct {
		name, yaml, err string
	}{
		{"empty", "", "manifest is empty"},
		{"two documents", "name: a\n" + app + "---\nname: b\n", "manifest must hold one YAML document"},
		{"not a mapping", "[1, 2]", "manifest must be a YAML mapping"},
		{"syntax", "name: [", "line 1: did not find expected node content"},
		{"indentation", "name: p\napps:\n  - name: a\n   exec: [/bin/true]\n", "line 4: did not find expected '-' indicator"},
		{"indentation deeper", "name: p\napps:\n  - name: a\n    exec: [/bin/true]\n     env: {A: b}\n", "line 5: did not find expected key"},
		{"tab", "name: p\napps:\n  - name: a\n\texec: [/bin/true]\n", "line 4: found a tab character that violates indentation"},
		{"flow not closed", "name: p\napps:\n  - name: a\n    exec: [\n      /bin/true,\n      x\n  - name: b\n", "line 6: did not find expected ',' or ']'"},
		{"quote not closed", "name: p\napps:\n  - name: a\n    exec: \"/bin/true\n  - name: b\n", "line 4: found unexpected end of stream"},
		{"key indented under a scalar", "name: p\n  apps: x\n", "line 2: mapping values are not allowed in this context"},
		{"unknown field", "name: p\napps:\n  - {name: a, exec: [/bin/true]}\n  - {name: b, exec: [/bin/true]}\n  - {name: c, exce: [/bin/true]}\n", `apps[2]: field "exce" not known`},
		{"unknown top field", "name: p\nnmae: q\n" + app, `field "nmae" not known`},
		{"unknown nested field", "name: p\napps: [{name: a, exec: [/bin/true], resources: {mem: 1G}}]\n", `apps[0].resources: field "mem" not known`},
		{"field twice", "name: p\nname: q\n" + app, `field "name" given twice`},
		{"env key twice", "name: p\napps: [{name: a, exec: [/bin/true], env: {A: x, A: y}}]\n", `apps[0].env: key "A" given twice`},
		{"no apps", "name: p\n", "apps: must list at least one app"},
		{"empty apps", "name: p\napps: []\n", "apps: must list at least one app"},
		{"only init apps", "name: p\napps: [{name: a, init: true, exec: [/bin/true]}]\n", "apps: must list at least one app that is not an init app"},
		{"duplicate app", "name: p\napps: [{name: a, exec: [/bin/true]}, {name: a, exec: [/bin/true]}]\n", `apps[1].name "a": duplicate of apps[0].name`},
		{"bad pod name", "name: Web\n" + app, `name "Web": must be 1 to 29 characters of a-z, 0-9 and -, starting with a letter or digit`},
		{"empty pod name", app, `name: must be 1 to 29 characters of a-z, 0-9 and -, starting with a letter or digit`},
		{"long pod name", "name: " + long + "\n" + app, `name "` + long + `": must be 1 to 29 characters of a-z, 0-9 and -, starting with a letter or digit`},
		{"dash first", "name: p\napps: [{name: -a, exec: [/bin/true]}]\n", `apps[0].name "-a": must be 1 to 63 characters of a-z, 0-9 and -, starting with a letter or digit`},
		{"bad app name", "name: p\napps: [{name: Web, exec: [/bin/true]}]\n", `apps[0].name "Web": must be 1 to 63 characters of a-z, 0-9 and -, starting with a letter or digit`},
		{"reserved app name", "name: p\napps: [{name: shutdown, exec: [/bin/true]}]\n", `apps[0].name "shutdown": reserved for the pod's shutdown service`},
		{"missing exec", "name: p\napps: [{name: a}]\n", "apps[0].exec: must not be empty"},
		{"empty exec", "name: p\napps: [{name: a, exec: []}]\n", "apps[0].exec: must not be empty"},
		{"relative exec", "name: p\napps: [{name: a, exec: [./sh, -c, x]}]\n", `apps[0].exec[0] "./sh": must be an absolute path or a command name without '/', looked up in PATH`},
		{"long command name", "name: p\napps: [{name: a, exec: [xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx]}]\n", `apps[0].exec[0] "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx": must be a command name of at most 255 bytes without control characters`},
		{"NUL in exec", "name: p\napps: [{name: a, exec: [/bin/echo, \"a\\0b\"]}]\n", `apps[0].exec[1] "a\x00b": must not contain NUL`},
		{"$ in exec[0]", "name: p\napps: [{name: a, exec: [/bin/$x]}]\n", `apps[0].exec: exec line: argv[0] "/bin/$x": character '$' not allowed`},
		{"exec not a list", "name: p\napps: [{name: a, exec: /bin/true}]\n", "apps[0].exec: must be a sequence, not a scalar"},
		{"null exec arg", "name: p\napps: [{name: a, exec: [/bin/true, ~]}]\n", "apps[0].exec[1]: must not be null"},
		{"env key with a space", "name: p\napps: [{name: a, exec: [/bin/true], env: {\"a b\": y}}]\n", `apps[0].env["a b"]: must be one or more of a-z, A-Z, 0-9, _, - and ., not starting with a digit`},
		{"bad env key", "name: p\napps: [{name: a, exec: [/bin/true], env: {1X: y}}]\n", `apps[0].env["1X"]: must be one or more of a-z, A-Z, 0-9, _, - and ., not starting with a digit`},
		{"env key with =", "name: p\napps: [{name: a, exec: [/bin/true], env: {\"A=B\": y}}]\n", `apps[0].env["A=B"]: must be one or more of a-z, A-Z, 0-9, _, - and ., not starting with a digit`},
		{"env value null", "name: p\napps: [{name: a, exec: [/bin/true], env: {A: }}]\n", `apps[0].env["A"]: must not be null`},
		{"env value list", "name: p\napps: [{name: a, exec: [/bin/true], env: {A: [1]}}]\n", `apps[0].env["A"]: must be a string, not a sequence`},
		{"capability with CAP_", "name: p\napps: [{name: a, exec: [/bin/true], capabilities: [KILL, CAP_CHOWN]}]\n", `apps[0].capabilities[1] "CAP_CHOWN": is not a Linux capability (named without CAP_`},
		{"relative mount source", "name: p\napps: [{name: a, exec: [/bin/true], mounts: [{source: data, path: /data}]}]\n", `apps[0].mounts[0].source "data": must be a clean absolute path`},
		{"mount without path", "name: p\napps: [{name: a, exec: [/bin/true], mounts: [{source: /data}]}]\n", `apps[0].mounts[0].path: must be a clean absolute path`},
		{"two mounts at one path", "name: p\napps: [{name: a, exec: [/bin/true], mounts: [{source: /a, path: /data}, {source: /b, path: /data}]}]\n", `apps[0].mounts[1].path "/data": duplicate of apps[0].mounts[0].path`},
		{"mount at the termination path", "name: p\napps: [{name: a, exec: [/bin/true], terminationMessagePath: /dev/log, mounts: [{source: /a, path: /dev/log}]}]\n", `apps[0].mounts[0].path "/dev/log": is the app's terminationMessagePath`},
		{"relative terminationMessagePath", "name: p\napps: [{name: a, exec: [/bin/true], terminationMessagePath: log}]\n", `apps[0].terminationMessagePath "log": must be a clean absolute path`},
		{"relative workingDir", "name: p\napps: [{name: a, exec: [/bin/true], workingDir: tmp}]\n", `apps[0].workingDir "tmp": must be a clean absolute path`},
		{"unclean workingDir", "name: p\napps: [{name: a, exec: [/bin/true], workingDir: /tmp/../etc}]\n", `apps[0].workingDir "/tmp/../etc": must be a clean absolute path`},
		{"workingDir newline", "name: p\napps: [{name: a, exec: [/bin/true], workingDir: \"/tmp/a\\nb\"}]\n", `apps[0].workingDir "/tmp/a\nb": must be a clean absolute path`},
		{"workingDir trailing space", "name: p\napps: [{name: a, exec: [/bin/true], workingDir: \"/tmp/a \"}]\n", `apps[0].workingDir "/tmp/a ": must be a clean absolute path`},
		{"bad user", "name: p\napps: [{name: a, exec: [/bin/true], user: \"a b\"}]\n", `apps[0].user "a b": must be a name of 1 to 31 characters of a-z, A-Z, 0-9, _ and -, starting with a letter or _, or a numeric ID below 4294967295`},
		{"bad group", "name: p\napps: [{name: a, exec: [/bin/true], group: \"4294967295\"}]\n", `apps[0].group "4294967295": must be a name of 1 to 31 characters of a-z, A-Z, 0-9, _ and -, starting with a letter or _, or a numeric ID below 4294967295`},
		{"bad exit policy", "exitPolicy: first\nname: p\n" + app, `exitPolicy "first": must be one of first-failure, any, all`},
		{"bad restart policy", "restartPolicy: always\nname: p\n" + app, `restartPolicy "always": must be one of Never, Always, OnFailure`},
		{"bad app restart policy", "name: p\napps: [{name: a, exec: [/bin/true], restartPolicy: sometimes}]\n", `apps[0].restartPolicy "sometimes": must be one of Never, Always, OnFailure`},
		{"hook of an init app", "name: p\napps: [{name: a, init: true, exec: [/bin/true], postStart: {exec: [/bin/true]}}, {name: b, exec: [/bin/true]}]\n", `apps[0].postStart: not allowed for an init app`},
		{"hook with two handlers", "name: p\napps: [{name: a, exec: [/bin/true], preStop: {exec: [/bin/true], http: {port: 80}}}]\n", `apps[0].preStop: must set exactly one of exec, http and sleep`},
		{"hook sleep and exec", "name: p\napps: [{name: a, exec: [/bin/true], postStart: {exec: [/bin/true], sleep: 1s}}]\n", `apps[0].postStart: must set exactly one of exec, http and sleep`},
		{"hook http port", "name: p\napps: [{name: a, exec: [/bin/true], preStop: {http: {port: 0}}}]\n", `apps[0].preStop.http.port "0": must be in 1..65535`},
		{"init Always", "name: p\napps: [{name: a, init: true, exec: [/bin/true], restartPolicy: Always}, {name: b, exec: [/bin/true]}]\n", `apps[0].restartPolicy "Always": not allowed for an init app, which runs to completion: only Never or OnFailure is`},
		{"init not bool", "name: p\napps: [{name: a, init: yes, exec: [/bin/true]}]\n", `apps[0].init "yes": must be true or false`},
		{"exit code range", "name: p\napps: [{name: a, exec: [/bin/true], successExitCodes: [1, 256]}]\n", `apps[0].successExitCodes[1] "256": must be in 0..255`},
		{"negative exit code", "name: p\napps: [{name: a, exec: [/bin/true], successExitCodes: [-1]}]\n", `apps[0].successExitCodes[0] "-1": must be in 0..255`},
		{"exit code string", "name: p\napps: [{name: a, exec: [/bin/true], successExitCodes: [\"1\"]}]\n", `apps[0].successExitCodes[0] "1": must be an integer`},
		{"bad stopTimeout", "name: p\napps: [{name: a, exec: [/bin/true], stopTimeout: soon}]\n", `apps[0].stopTimeout "soon": must be a finite time span like "90s", "1min 30s" or "1m30s"`},
		{"negative stopTimeout", "name: p\napps: [{name: a, exec: [/bin/true], stopTimeout: -1s}]\n", `apps[0].stopTimeout "-1s": must be a finite time span`},
		{"infinite stopTimeout", "name: p\napps: [{name: a, exec: [/bin/true], stopTimeout: infinity}]\n", `apps[0].stopTimeout "infinity": must be a finite time span`},
		{"backoff max below initial", "name: p\nrestartBackoff: {initial: 1min, max: 1s}\n" + app, `restartBackoff.max "1s": must not be shorter than restartBackoff.initial 1m0s`},
		{"backoff below the floor", "name: p\nrestartBackoff: {initial: 1ns}\n" + app, `restartBackoff.initial "1ns": must be at least 100ms, so that apps restarting in a loop leave the host responsive`},
		{"backoff just below the floor", "name: p\nrestartBackoff: {initial: 99ms}\n" + app, `restartBackoff.initial "99ms": must be at least 100ms`},
		{"log files too small", "name: p\nlogs: {maxSize: 1K}\n" + app, `logs.maxSize "1K": must be a size of 4K or more, like "10M"`},
		{"log size not a size", "name: p\nlogs: {maxSize: big}\n" + app, `logs.maxSize "big": must be a size of 4K or more`},
		{"one log file", "name: p\nlogs: {maxFiles: 1}\n" + app, `logs.maxFiles "1": must be 2 or more: the file being written and the one before it`},
		{"negative log files", "name: p\nlogs: {maxFiles: -3}\n" + app, `logs.maxFiles "-3": must be 2 or more`},
		{"bad memory", "name: p\napps: [{name: a, exec: [/bin/true], resources: {memory: lots}}]\n", `apps[0].resources.memory "lots": must be a size above 0, like "512M"`},
		{"zero memory", "name: p\napps: [{name: a, exec: [/bin/true], resources: {memory: \"0\"}}]\n", `apps[0].resources.memory "0": must be a size above 0`},
		{"cpuWeight 0", "name: p\napps: [{name: a, exec: [/bin/true], resources: {cpuWeight: 0}}]\n", `apps[0].resources.cpuWeight "0": must be in 1..10000`},
		{"cpuWeight high", "name: p\napps: [{name: a, exec: [/bin/true], resources: {cpuWeight: 10001}}]\n", `apps[0].resources.cpuWeight "10001": must be in 1..10000`},
		{"tasks 0", "name: p\napps: [{name: a, exec: [/bin/true], resources: {tasks: 0}}]\n", `apps[0].resources.tasks "0": must be at least 1`},
		{"huge int", "name: p\napps: [{name: a, exec: [/bin/true], resources: {tasks: 99999999999999999999}}]\n", `apps[0].resources.tasks "99999999999999999999": must be an integer`},
		{"bad isolation", "isolation: vm\nname: p\n" + app, `isolation "vm": must be one of none, namespaces`},
		{"network none on host", "network: none\nname: p\n" + app, `network "none": needs isolation: namespaces`},
		{"rootfs on host", "name: p\napps: [{name: a, exec: [/bin/true], rootfs: /srv/root}]\n", `apps[0].rootfs "/srv/root": needs isolation: namespaces`},
		{"image and rootfs", "name: p\nisolation: namespaces\napps: [{name: a, image: busybox, rootfs: /srv/root}]\n", `apps[0].rootfs "/srv/root": not allowed with image: an app's root is its image or its rootfs`},
		{"image with a space", "name: p\nisolation: namespaces\napps: [{name: a, image: \"busy box\"}]\n", `apps[0].image "busy box": must be an image reference`},
		{"bad pull policy", "name: p\nisolation: namespaces\napps: [{name: a, image: busybox, imagePullPolicy: Sometimes}]\n", `apps[0].imagePullPolicy "Sometimes": must be one of Always, IfNotPresent, Never`},
		{"pull policy without image", "name: p\napps: [{name: a, exec: [/bin/true], imagePullPolicy: Never}]\n", `apps[0].imagePullPolicy "Never": needs image`},
		{"runAsNonRoot without image", "name: p\napps: [{name: a, exec: [/bin/true], runAsNonRoot: true}]\n", `apps[0].runAsNonRoot: needs image: without one, set a user that is not root`},
		{"args without image", "name: p\napps: [{name: a, exec: [/bin/true], args: [x]}]\n", `apps[0].args: needs image: without one, put the arguments in exec`},
		{"imageID not a manifest's", "name: p\nisolation: namespaces\napps: [{name: a, image: busybox, imageID: x}]\n", `apps[0]: field "imageID" not known`},
		{"two probes", "name: p\napps: [{name: a, exec: [/bin/true], probe: {tcp: {port: 1}, http: {port: 2}}}]\n", "apps[0].probe: must set exactly one of exec, http, tcp and grpc"},
		{"no probe", "name: p\napps: [{name: a, exec: [/bin/true], probe: {periodSeconds: 1}}]\n", "apps[0].probe: must set exactly one of exec, http, tcp and grpc"},
		{"probe port", "name: p\napps: [{name: a, exec: [/bin/true], probe: {tcp: {port: 65536}}}]\n", `apps[0].probe.tcp.port "65536": must be in 1..65535`},
		{"probe path", "name: p\napps: [{name: a, exec: [/bin/true], probe: {http: {port: 80, path: healthz}}}]\n", `apps[0].probe.http.path "healthz": must start with / and hold no spaces or control characters`},
		{"probe status", "name: p\napps: [{name: a, exec: [/bin/true], probe: {http: {port: 80, status: 400-200}}}]\n", `apps[0].probe.http.status "400-200": must be a status code or a range like 200-399, within 100-599`},
		{"probe exec", "name: p\napps: [{name: a, exec: [/bin/true], probe: {exec: [bin/curl]}}]\n", `apps[0].probe.exec[0] "bin/curl": must be an absolute path or a command name without '/', looked up in PATH`},
		{"probe timing", "name: p\napps: [{name: a, exec: [/bin/true], probe: {tcp: {port: 1}, periodSeconds: -1, initialDelaySeconds: -2}}]\n",
			"apps[0].probe.initialDelaySeconds \"-2\": must not be negative\napps[0].probe.periodSeconds \"-1\": must be at least 1"},
		{"probe action", "name: p\napps: [{name: a, exec: [/bin/true], probe: {tcp: {port: 1}, action: kill}}]\n", `apps[0].probe.action "kill": must be one of restart, fail-pod`},
		{"init probe", "name: p\napps: [{name: a, init: true, exec: [/bin/true], probe: {tcp: {port: 1}}}, {name: b, exec: [/bin/true]}]\n", "apps[0].probe: not allowed for an init app"},
		{"init sidecar", "name: p\napps: [{name: a, init: true, sidecar: true, exec: [/bin/true]}, {name: b, exec: [/bin/true]}]\n", `apps[0].sidecar "true": not allowed for an init app: an app is an init app, a sidecar or neither`},
		{"sidecar Never", "name: p\napps: [{name: a, sidecar: true, restartPolicy: Never, exec: [/bin/true]}, {name: b, exec: [/bin/true]}]\n", `apps[0].restartPolicy "Never": not allowed for a sidecar, which runs again whenever it exits while the pod runs: only Always is`},
		{"sidecar not bool", "name: p\napps: [{name: a, sidecar: 1, exec: [/bin/true]}, {name: b, exec: [/bin/true]}]\n", `apps[0].sidecar "1": must be true or false`},
		{"only sidecars", "name: p\napps: [{name: a, sidecar: true, exec: [/bin/true]}]\n", "apps: must list at least one app that is not an init app or a sidecar"},
		{"readiness action", "name: p\napps: [{name: a, exec: [/bin/true], readinessProbe: {tcp: {port: 1}, action: restart}}]\n", `apps[0].readinessProbe.action "restart": not allowed for a readiness probe, which never restarts the app nor ends the pod`},
		{"readiness kinds", "name: p\napps: [{name: a, exec: [/bin/true], readinessProbe: {periodSeconds: 1}}]\n", "apps[0].readinessProbe: must set exactly one of exec, http, tcp and grpc"},
		{"readiness threshold", "name: p\napps: [{name: a, exec: [/bin/true], readinessProbe: {tcp: {port: 1}, failureThreshold: -1}}]\n", `apps[0].readinessProbe.failureThreshold "-1": must be at least 1`},
		{"startup action", "name: p\napps: [{name: a, exec: [/bin/true], startupProbe: {tcp: {port: 1}, action: stop}}]\n", `apps[0].startupProbe.action "stop"`},
		{"sidecar fail-pod", "name: p\napps: [{name: a, exec: [/bin/true]}, {name: s, sidecar: true, exec: [/bin/true], probe: {tcp: {port: 1}, action: fail-pod}}]\n", `apps[1].probe.action "fail-pod": must be restart for a sidecar, which never decides the pod's outcome`},
		{"startup port", "name: p\napps: [{name: a, exec: [/bin/true], startupProbe: {http: {port: 0}}}]\n", `apps[0].startupProbe.http.port "0": must be in 1..65535`},
		{"grpc port", "name: p\napps: [{name: a, exec: [/bin/true], probe: {grpc: {port: 70000, service: x}}}]\n", `apps[0].probe.grpc.port "70000": must be in 1..65535`},
		{"init readiness", "name: p\napps: [{name: a, init: true, exec: [/bin/true], readinessProbe: {tcp: {port: 1}}}, {name: b, exec: [/bin/true]}]\n", "apps[0].readinessProbe: not allowed for an init app"},
		{"readiness stopTimeout", "name: p\napps: [{name: a, exec: [/bin/true], readinessProbe: {tcp: {port: 1}, stopTimeout: 5s}}]\n", `apps[0].readinessProbe.stopTimeout "5s": not allowed for a readiness probe, which never ends a run`},
		{"startup field", "name: p\napps: [{name: a, exec: [/bin/true], startupProbe: {tcp: {port: 1}, period: 1}}]\n", `apps[0].startupProbe: field "period" not known`},
		{"every error", "name: P\napps: [{name: A, exec: [x/y]}]\n",
			"name \"P\": must be 1 to 29 characters of a-z, 0-9 and -, starting with a letter or digit\napps[0].name \"A\": must be 1 to 63 characters of a-z, 0-9 and -, starting with a letter or digit\napps[0].exec[0] \"x/y\": must be an absolute path or a command name without '/', looked up in PATH"},
		{"alias bomb", "name: p\napps:\n  - &a {name: a, exec: &e [" + strings.Repeat("/x,", 2000) + "/x]}\n" + strings.Repeat("  - *a\n", 1000),
			"manifest expands to more than 1048576 values"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", c.yaml)
			}
			if !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("Parse error:\n%s\nwant one that starts with:\n%s", err, c.err)
			}
		})
	}
}

// TestNameLengths checks that the longest names make unit names systemd
// accepts.
func TestNameLengths(t *testing.T) {
	longest := "a" + strings.Repeat("-", 28)
	m, err := Parse([]byte("name: " + longest + "\napps: [{name: " + longest + ", exec: [/bin/true]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Nodes(m) {
		if err := unit.Validate(n.Name); err != nil {
			t.Error(err)
		}
	}
	// One more character would be too many, so the rule is as loose as it
	// can be.
	if got := reaperService(longest+"-", longest+"-"); len(got) <= 255 {
		t.Errorf("reaper name for 30-character names is %d bytes, want more than 255", len(got))
	}
}

func TestLoad(t *testing.T) {
	m := mustLoad(t, "two-apps.yaml")
	if m.Name != "web" || len(m.Apps) != 2 {
		t.Errorf("Load(two-apps.yaml) = %+v", m)
	}
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || err.Error() != path+": apps: must list at least one app that is not an init app" {
		t.Errorf("Load(bad.yaml) = %v", err)
	}
	if err := os.WriteFile(path, make([]byte, maxManifestSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "manifest larger than") {
		t.Errorf("Load(huge) = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"two-apps.yaml", "init-restart.yaml", "nasty.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("name: p\napps: [{name: a, exec: [/bin/true], probe: {http: {port: 1, status: 200-299}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		// A manifest that parses renders, and its units are well formed.
		if _, err := Graph(m, goldenOptions); err != nil {
			t.Fatalf("Parse accepted a manifest that Graph refuses: %v\n%s", err, data)
		}
	})
}

// TestParseReportsEveryError: a manifest's errors come all at once, each
// once, each with its field path, whatever kind of error comes first.
func TestParseReportsEveryError(t *testing.T) {
	const mustBePolicy = `must be one of Never, Always, OnFailure`
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"pod restart policy once", "name: p\nrestartPolicy: OnFaliure\napps:\n  - {name: a, exec: [/bin/true]}\n  - {name: b, exec: [/bin/true]}\n  - {name: c, init: true, exec: [/bin/true]}\n",
			[]string{`restartPolicy "OnFaliure": ` + mustBePolicy}},
		{"pod and app restart policies", "name: p\nrestartPolicy: OnFaliure\napps:\n  - {name: a, exec: [/bin/true], restartPolicy: always}\n  - {name: b, exec: [/bin/true]}\n",
			[]string{`restartPolicy "OnFaliure": ` + mustBePolicy, `apps[0].restartPolicy "always": ` + mustBePolicy}},
		{"unknown field then type errors", "name: p\napps:\n  - {name: a, exce: [/bin/true], exec: /bin/true, init: maybe, stopTimeout: soon}\n  - {name: b, exec: [/bin/true], successExitCodes: [x]}\n",
			[]string{`apps[0]: field "exce" not known`, `apps[0].exec: must be a sequence, not a scalar`, `apps[0].init "maybe": must be true or false`,
				`apps[0].stopTimeout "soon": must be a finite time span like "90s", "1min 30s" or "1m30s"`, `apps[1].successExitCodes[0] "x": must be an integer`}},
		{"unknown top field, type errors and rules", "nmae: q\nname: P\nexitPolicy: [any]\nrestartBackoff: {initial: soon}\napps:\n  - {name: A, exec: [x/y], env: {A: [1]}}\n",
			[]string{`field "nmae" not known`, `exitPolicy: must be a string, not a sequence`, `restartBackoff.initial "soon": must be a finite time span like "90s", "1min 30s" or "1m30s"`, `apps[0].env["A"]: must be a string, not a sequence`,
				`name "P": must be 1 to 29 characters of a-z, 0-9 and -, starting with a letter or digit`, `apps[0].name "A": must be 1 to 63 characters of a-z, 0-9 and -, starting with a letter or digit`, `apps[0].exec[0] "x/y": must be an absolute path or a command name without '/', looked up in PATH`}},
		{"app not a mapping", "name: p\napps: [x, {name: b, exec: [/bin/true]}, {name: c}]\n",
			[]string{`apps[0]: must be a mapping, not a scalar`, `apps[2].exec: must not be empty`}},
		{"apps not a sequence", "name: p\napps: 3\n",
			[]string{`apps: must be a sequence, not a scalar`}},
		{"fields and keys twice", "name: p\nname: q\napps: [{name: a, exec: [/bin/true], env: {A: x, A: y}, init: 1}]\n",
			[]string{`field "name" given twice`, `apps[0].env: key "A" given twice`, `apps[0].init "1": must be true or false`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", c.yaml)
			}
			if got, want := err.Error(), strings.Join(c.want, "\n"); got != want {
				t.Errorf("Parse error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestParseLimits: a manifest at each limit is accepted, one past it is
// refused with an error that names the limit.
func TestParseLimits(t *testing.T) {
	apps := func(n int) string {
		var b strings.Builder
		b.WriteString("name: p\napps:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {name: a%d, exec: [/bin/true]}\n", i)
		}
		return b.String()
	}
	arg := func(n int) string {
		return "name: p\napps:\n  - {name: a, exec: [/bin/echo, " + strings.Repeat("x", n) + "]}\n"
	}
	env := func(n int) string {
		return "name: p\napps:\n  - {name: a, exec: [/bin/true], env: {X: " + strings.Repeat("x", n-2) + "}}\n"
	}
	escaped := "name: p\napps:\n  - name: a\n    exec: [/bin/true]\n    env:\n"
	for i := range 2 {
		escaped += fmt.Sprintf("      X%d: %q\n", i, strings.Repeat("<", maxArgLen-3))
	}
	for _, c := range []struct {
		name, yaml, err string
	}{
		{"most apps", apps(MaxApps), ""},
		{"too many apps", apps(MaxApps + 1), fmt.Sprintf("apps: lists %d apps, more than the %d a pod may have", MaxApps+1, MaxApps)},
		{"longest argument", arg(maxArgLen), ""},
		{"argument too long", arg(maxArgLen + 1), fmt.Sprintf("apps[0].exec[1]: is %d bytes, more than the %d the kernel passes to a command", maxArgLen+1, maxArgLen)},
		{"longest env entry", env(maxArgLen), ""},
		{"env entry too long", env(maxArgLen + 1), fmt.Sprintf(`apps[0].env["X"]: is %d bytes as K=V, more than the %d the kernel passes to a command`, maxArgLen+1, maxArgLen)},
		{"manifest.json too large", escaped, "manifest would be 1573090 bytes in the pod's manifest.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			switch {
			case c.err == "" && err != nil:
				t.Errorf("Parse refused it: %v", err)
			case c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)):
				t.Errorf("Parse error %v, want one that starts with %q", err, c.err)
			}
		})
	}
}

// TestParseErrorsBounded: an error that aliases repeat is reported at most
// maxProblems times, and the error says there are more.
func TestParseErrorsBounded(t *testing.T) {
	yaml := "name: p\napps:\n  - &a {name: a, exec: x}\n" + strings.Repeat("  - *a\n", 100000)
	_, err := Parse([]byte(yaml))
	if err == nil {
		t.Fatal("Parse accepted it")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxProblems+1 || lines[0] != "apps[0].exec: must be a sequence, not a scalar" || lines[maxProblems] != "more than 100 errors: fix these first" {
		t.Errorf("Parse error has %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}
