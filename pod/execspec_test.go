package pod

import (
	"os"
	"reflect"
	"testing"

	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/record"
)

// appexec.Load, which the small hook binary reads an app with, reads
// from the pod's spec file what ExecSpec gives of the app, every field
// set or not: the names of the spec file's fields are package pod's.
func TestExecSpecLoads(t *testing.T) {
	const manifest = `
name: p
isolation: namespaces
apps:
  - name: full
    exec: ["/bin/sh", "-c", "true"]
    env: {A: "1", PATH: /bin}
    workingDir: /tmp
    user: daemon
    group: root
    rootfs: /srv/root
    capabilities: [CHOWN]
    noNewPrivileges: true
    terminationMessagePath: /dev/termination-log
    readinessProbe: {exec: [/bin/true]}
  - name: init
    init: true
    exec: [/bin/true]
    capabilities: []
  - name: started
    exec: [/bin/true]
    startupProbe: {exec: [/bin/true]}
  - name: bare
    exec: [/bin/true]
`
	m, err := Parse([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(record.Dir(dir, m.Name), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteState(dir, m, []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	for _, a := range m.Apps {
		got, err := appexec.Load(dir, m.Name, a.Name)
		if err != nil {
			t.Fatal(err)
		}
		if want := a.ExecSpec(); !reflect.DeepEqual(got, want) {
			t.Errorf("app %s: appexec.Load gives %+v, want %+v", a.Name, got, want)
		}
	}
}
