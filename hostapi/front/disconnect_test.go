package front_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// A SEQPACKET caller that goes away while it waits for a job of an
// on_disconnect "stop" op has the job canceled by the op as the job was
// called with it, even when a reload has removed the op meanwhile (the
// front end once looked the op up by name, found none and crashed).
func TestSeqpacketDisconnectAfterReload(t *testing.T) {
	d, dir := newTestDaemon(t, systemdtest.Conn(t), "")
	_, argv := serveTest(t, d)
	conn, err := net.Dial("unixpacket", argv)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pkt, err := api.EncodeRequest("stopme", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(pkt); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var id string
	for id == "" {
		recs, _ := d.List()
		for _, r := range recs {
			if tail := daemontest.Output(d, r.ID); r.Op == "stopme" && tail == "started\n" && !r.Done() {
				id = r.ID
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the job of stopme never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	reloaded := filepath.Join(dir, "reloaded.toml")
	if err := os.WriteFile(reloaded, []byte("[[op]]\nname = \"echo\"\nexec = [\"/bin/true\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(reloaded, "")
	if err != nil {
		t.Fatal(err)
	}
	d.Reload(cfg)
	conn.Close()
	if r, err := d.Wait(ctx, id); err != nil || r.State != api.StateCanceled {
		t.Errorf("stopme after a reload removed it: %+v, %v: want canceled when its caller went away", r, err)
	}
}
