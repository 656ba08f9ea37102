package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// TestDaemonActivatedWithOneSocket starts the daemon from a socket unit
// that passes the HTTP socket alone, then from one that passes the
// SEQPACKET socket alone: each serves its front end, as the daemon does
// when given --socket or --seqpacket alone. Socket activation wanted both,
// and the daemon exited on a start with one ("want one socket named "api"
// ... and one named "argv" ..., got 1 and 0"), its caller's connection
// reset.
func TestDaemonActivatedWithOneSocket(t *testing.T) {
	d := systemdtest.NewDaemon(t, "[[op]]\nname = \"hello\"\nexec = [\"/bin/echo\", \"hello\"]\n")
	conn := systemdtest.Conn(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, listen, path string
		call               func() (string, error)
	}{
		{"unitrun-test-http-only", "ListenStream=" + d.API + "\nFileDescriptorName=api", d.API, func() (string, error) {
			out, errs, code := unitrun(t, "op", "call", "-q", "--socket", d.API, "hello")
			if code != 0 {
				return out, fmt.Errorf("op call: exit %d, stderr %q", code, errs)
			}
			return out, nil
		}},
		{"unitrun-test-argv-only", "ListenSequentialPacket=" + d.Argv + "\nFileDescriptorName=argv", d.Argv, func() (string, error) {
			c, err := net.Dial("unixpacket", d.Argv)
			if err != nil {
				return "", err
			}
			defer c.Close()
			pkt, _ := api.EncodeRequest("hello", nil)
			if _, err := c.Write(pkt); err != nil {
				return "", err
			}
			buf := make([]byte, 64<<10)
			n, err := c.Read(buf)
			return strings.SplitN(string(buf[:n]), "\x00", 2)[0] + "\n", err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			units := systemdtest.RuntimeUnitDir(t)
			systemdtest.WriteUnit(t, filepath.Join(units, tc.name+".socket"), "[Socket]\n"+tc.listen+"\nSocketMode=0600\n")
			systemdtest.WriteUnit(t, filepath.Join(units, tc.name+".service"), `[Service]
Type=notify
ExecStart=`+systemdtest.Binary(t)+" "+strings.Join(d.Args(), " ")+`
Environment=`+manager.EnvManager+"="+os.Getenv(manager.EnvManager)+`
StandardError=file:`+filepath.Join(d.Dir, tc.name+".log")+`
`)
			if err := conn.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				for _, u := range []string{tc.name + ".socket", tc.name + ".service"} {
					conn.StopUnit(context.Background(), u, "replace")
					conn.ResetFailedUnit(context.Background(), u)
				}
			})
			if _, err := job.Unit(conn, tc.name+".socket").Run(ctx); err != nil {
				t.Fatal(err)
			}
			if out, err := tc.call(); err != nil || (out != "hello\n" && out != "ok\n") {
				log, _ := os.ReadFile(filepath.Join(d.Dir, tc.name+".log"))
				t.Fatalf("a call through %s: %q, %v; the daemon logged:\n%s", tc.path, out, err, log)
			}
			systemdtest.WaitActiveState(t, conn, tc.name+".service", "active")
		})
	}
}
