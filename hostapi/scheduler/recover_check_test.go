package scheduler

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestRecoverRechecksRecords plants, in a state directory the daemon
// trusts, records that no call could have made, each of a job whose unit
// was never created (running, unmarked, of this boot) or still queued, so
// that recovery would start it: args its op's pattern refuses, a caller
// the op does not allow, and a unit name not the op's. Each is recorded
// failed with the reason and never run (its side-effect file never
// appears); a planted record that passes the checks runs.
func TestRecoverRechecksRecords(t *testing.T) {
	d1, dir := newTestScheduler(t, systemdtest.Conn(t), `
[[op]]
name = "planted"
exec = ['/bin/sh', '-c', 'touch "@DIR@/ran-$1"', 'sh']
args = { min = 1, max = 1, pattern = "^[a-z]+$" }
`)
	store := d1.store
	plant := func(state api.State, uid uint32, arg, unit string) *api.Record {
		id := store.NewID()
		r := &api.Record{ID: id, Op: "planted", Args: []string{arg}, State: state, BootID: d1.bootID, CallerUID: uid, CreatedAt: time.Now().UTC()}
		if state == api.StateRunning {
			r.Unit = "unitrun-op-planted-" + strings.ToLower(id) + ".service"
			if unit != "" {
				r.Unit = unit
			}
		}
		if err := store.Put(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	refused := map[*api.Record]string{
		plant(api.StateRunning, 0, "id > pwned", ""):                      `arg 0 does not match pattern`,
		plant(api.StateQueued, 0, "id > queued", ""):                      `arg 0 does not match pattern`,
		plant(api.StateRunning, 65534, "nobody", ""):                      `uid 65534 is not in allow_uids`,
		plant(api.StateRunning, 0, "renamed", "unitrun-op-other.service"): `names unit unitrun-op-other.service`,
	}
	good := plant(api.StateRunning, 0, "ok", "")
	d1.Close()

	d2 := New(d1.cfg, store, systemdtest.Conn(t))
	if err := d2.Recover(); err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for planted, why := range refused {
		r, err := d2.Wait(ctx, planted.ID)
		if err != nil || r.State != api.StateFailed || !strings.Contains(r.Message, why) {
			t.Errorf("planted %s record %q of uid %d: %+v, %v; want failed saying %q", planted.State, planted.Args, planted.CallerUID, r, err, why)
		}
	}
	if r, err := d2.Wait(ctx, good.ID); err != nil || r.State != api.StateSucceeded {
		t.Errorf("planted record that a call could make: %+v, %v; want it run", r, err)
	}
	ran, _ := filepath.Glob(filepath.Join(dir, "ran-*"))
	if len(ran) != 1 || ran[0] != filepath.Join(dir, "ran-ok") {
		t.Errorf("side effects: %q; want only ran-ok", ran)
	}
	for planted := range refused {
		if ok, _ := store.Started(planted.ID); ok {
			t.Errorf("planted %q: marked started", planted.Args)
		}
	}
}
