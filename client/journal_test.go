package client_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// journalUnits are a journald for a test system manager: its sockets and
// service, as the host's units have them, without their sandboxing.
var journalUnits = map[string]string{
	"systemd-journald.socket": "[Unit]\nDefaultDependencies=no\n[Socket]\nListenStream=/run/systemd/journal/stdout\n" +
		"ListenDatagram=/run/systemd/journal/socket\nSocketMode=0666\nPassCredentials=yes\nPassSecurity=yes\nReceiveBuffer=8M\n",
	"systemd-journald.service": "[Unit]\nDefaultDependencies=no\nRequires=systemd-journald.socket\nAfter=systemd-journald.socket\n" +
		"[Service]\nType=notify\nExecStart=/lib/systemd/systemd-journald\nSockets=systemd-journald.socket\n" +
		"RuntimeDirectory=systemd/journal\nRuntimeDirectoryPreserve=yes\nStandardOutput=null\n",
	"unitrun-hello.service": "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo hello; echo to-stderr >&2; exit 3'\n",
}

// TestUnitOpOutputFromJournal runs the daemon on a system manager with a
// journald, and checks that a unit op's record and logs hold what that run
// of the unit logged, and only that run.
func TestUnitOpOutputFromJournal(t *testing.T) {
	sys := systemdtest.BootSystem(t)
	for name, text := range journalUnits {
		if err := os.WriteFile(filepath.Join(sys.UnitPath[0], name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inside := func(args ...string) {
		t.Helper()
		if out, err := sys.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	inside("systemctl", "daemon-reload")
	inside("systemctl", "start", "systemd-journald.socket")
	d := systemdtest.NewDaemon(t, "[[op]]\nname = \"hello\"\nunit = \"unitrun-hello.service\"\n")
	inside(append([]string{"systemd-run", "--unit", "unitrun-test-daemon", "--", systemdtest.Binary(t)},
		append(d.Args(), "--socket", d.API, "--seqpacket", d.Argv)...)...)
	t.Cleanup(func() { sys.Command("systemctl", "stop", "unitrun-test-daemon").Run() })
	c := client.New(d.API)
	ctx := timeout(t)
	for {
		if _, err := c.Ops(ctx); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the daemon inside the test system never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for run := 1; run <= 2; run++ {
		id, err := c.Call(ctx, "hello", nil)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := c.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State != api.StateFailed || rec.ExitCode == nil || *rec.ExitCode != 3 || rec.OutputTail != "hello\nto-stderr\n" {
			t.Errorf("run %d: record %+v: want exit code 3 and this run's output", run, rec)
		}
		var logs strings.Builder
		if err := c.Logs(ctx, id, false, &logs); err != nil || logs.String() != "hello\nto-stderr\n" {
			t.Errorf("run %d: logs %q, %v", run, logs.String(), err)
		}
	}
}
