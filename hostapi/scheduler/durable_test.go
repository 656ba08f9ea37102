package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// gatedCommits holds every Commit until gate is closed.
type gatedCommits struct {
	recordStore
	gate chan struct{}
}

func (g gatedCommits) Commit(id string) error {
	<-g.gate
	return g.recordStore.Commit(id)
}

// A call that joins a running job of an exclusive op, or finds it by its
// key, hears of the job only once its record is durable, as the call that
// started it does: here not before the commit that the start waits for is
// let through.
func TestJoinWaitsForDurableRecord(t *testing.T) {
	gate := make(chan struct{})
	d, _ := daemontest.Open(t, systemdtest.Conn(t), "", func(dir string) (*Store, error) {
		s, err := OpenStore(dir)
		if err == nil {
			s.recordStore = gatedCommits{s.recordStore, gate}
		}
		return s, err
	}, New)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type answer struct {
		rec *api.Record
		err error
	}
	call := func(key string) chan answer {
		c := make(chan answer, 1)
		go func() {
			rec, err := d.CallKeyed(ctx, root, "excl", []string{"a"}, key)
			c <- answer{rec, err}
		}()
		return c
	}
	first := call("k")
	for {
		recs, err := d.store.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 1 && recs[0].State == api.StateRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	joined, keyed := call(""), call("k")
	select {
	case a := <-joined:
		t.Errorf("the joining call was answered before the job's record was durable: %+v, %v", a.rec, a.err)
		joined <- a
	case a := <-keyed:
		t.Errorf("the call with the key was answered before the job's record was durable: %+v, %v", a.rec, a.err)
		keyed <- a
	case <-time.After(300 * time.Millisecond):
	}
	close(gate)
	var id string
	for _, c := range []chan answer{first, joined, keyed} {
		a := <-c
		if a.err != nil {
			t.Fatal(a.err)
		}
		if id == "" {
			id = a.rec.ID
		} else if a.rec.ID != id {
			t.Errorf("job %s, want the first call's %s", a.rec.ID, id)
		}
	}
}
