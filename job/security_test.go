package job_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// TestSecurityArgvSurvivesReload hands hostile words to a transient unit as
// argv and environment values, reloads the manager while
// it runs (which re-reads the unit from the file systemd wrote for it), and
// checks that the words arrived exactly, that the reloaded unit has no
// ExecStartPre=, ExecStopPost= or other added command, and that no
// injected command ran.
func TestSecurityArgvSurvivesReload(t *testing.T) {
	dir := t.TempDir()
	words := systemdtest.Hostile(dir)
	gate := filepath.Join(dir, "gate")
	var env []string
	script := `printf '%s\0' "$@"; printf 'ENV:%s\0' "$V0" "$V1"; while [ ! -e "$GATE" ]; do sleep 0.05; done`
	env = append(env, "V0="+words[0], "V1="+words[6], "GATE="+gate)
	c := sh(t, script, words...)
	c.Env = env
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := systemdtest.Conn(t).Reload(ctx); err != nil {
		t.Fatal(err)
	}
	props, err := systemdtest.Conn(t).Properties(ctx, c.Unit, manager.ServiceIface)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ExecStartPre", "ExecStopPost", "ExecStartPost", "ExecStop"} {
		if v := reflect.ValueOf(props[k].Value()); v.Kind() != reflect.Slice || v.Len() != 0 {
			t.Errorf("after daemon-reload the unit has %s=%s", k, props[k])
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	want := strings.Join(words, "\x00") + "\x00ENV:" + words[0] + "\x00ENV:" + words[6] + "\x00"
	if out.String() != want {
		t.Errorf("argv and env arrived as\n%q\nwant\n%q", out.String(), want)
	}
	systemdtest.NoPwned(t, dir)
}

// TestSecurityUnitNameRefused gives names that are not unit names, or that
// would name another unit type or a path: Start refuses each before
// anything is created.
func TestSecurityUnitNameRefused(t *testing.T) {
	for _, name := range []string{"../x.service", "a/b.service", "x.service\n", "x\nExecStart=/bin/true.service", "x.socket", "dbus.service/../x.service", "%n.service"} {
		c := job.Command(systemdtest.Conn(t), "/bin/true")
		c.Name = name
		if err := c.Start(); err == nil {
			c.Wait()
			t.Errorf("unit name %q: Start succeeded, want a refusal", name)
		}
	}
}

// TestSecurityLineBreakFieldsRefused gives Description and Dir values with
// a line break and a section header. systemd 252 writes both unescaped into
// the transient unit's file, so a daemon-reload would read the header and
// add the command after it (which an earlier version of this test showed);
// Start refuses them, naming the field, before any unit exists.
func TestSecurityLineBreakFieldsRefused(t *testing.T) {
	dir := t.TempDir()
	inj := "[Service]\nExecStopPost=/usr/bin/touch " + filepath.Join(dir, "pwned")
	for _, tt := range []struct {
		field string
		set   func(*job.Cmd)
	}{
		{"Description", func(c *job.Cmd) { c.Description = "desc\n" + inj }},
		{"Description", func(c *job.Cmd) { c.Description = "desc\r" + inj }},
		{"Dir", func(c *job.Cmd) { c.Dir = dir + "/wd\n" + inj }},
		{"Dir", func(c *job.Cmd) { c.Dir = dir + "/\x1b[2J" }},
	} {
		c := job.Command(systemdtest.Conn(t), "/bin/true")
		tt.set(c)
		err := c.Start()
		if err == nil {
			c.Wait()
			t.Errorf("%s with a control character: Start succeeded, want a refusal", tt.field)
			continue
		}
		if !strings.Contains(err.Error(), tt.field) || c.Unit != "" {
			t.Errorf("%s: %v (unit %q), want an error naming %s and no unit", tt.field, err, c.Unit, tt.field)
		}
	}
	systemdtest.NoPwned(t, dir)
}
