package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

// logWatch is a daemon's log that tells when a line holding a given text
// was logged.
type logWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{} // signalled at each line
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	select {
	case w.seen <- struct{}{}:
	default:
	}
	return len(p), nil
}

// waitFor waits until a line holding text was logged, n times in all.
func (w *logWatch) waitFor(ctx context.Context, t *testing.T, text string, n int) {
	t.Helper()
	for {
		w.mu.Lock()
		got := strings.Count(w.buf.String(), text)
		w.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-w.seen:
		case <-ctx.Done():
			t.Fatalf("no %d lines %q in the daemon's log: %v", n, text, ctx.Err())
		}
	}
}

// fill writes a file in dir until the file system is full, and returns
// its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("f"), 4<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// loaded reports whether the manager has the unit loaded.
func loaded(ctx context.Context, t *testing.T, mgr *manager.Conn, name string) bool {
	t.Helper()
	props, err := mgr.Properties(ctx, name, manager.UnitIface)
	if err != nil {
		t.Fatal(err)
	}
	return props["LoadState"].Value() != "not-found"
}

// TestOutcomeKeptWhileStateDirFull runs, with the state dir on a 1 MiB
// tmpfs, an op that prints 9 kB, waits for the disk to fill, and exits 7.
// While the outcome cannot be stored, the job reads as running, no
// waiter is answered, and its unit and pin stay loaded; once space is
// freed, the outcome is stored (failed, exit code 7, its output tail),
// waiters get it, and the unit and pin are released. The same again, but
// the daemon stops before space is freed: the next daemon reads the
// outcome from the unit its pin kept, and records it; and once more with
// the state dir still full when the next daemon starts, which keeps the
// unit as the first did until there is room.
func TestOutcomeKeptWhileStateDirFull(t *testing.T) {
	file, dir := daemontest.WriteConfig(t, `
[[op]]
name = "full"
exec = ['/bin/sh', '-c', 'head -c 9000 /dev/zero | tr "\0" x; while [ ! -e "@DIR@/gate-$1" ]; do sleep 0.05; done; exit 7', 'sh']
args = { min = 1, max = 1 }
`)
	cfg, err := config.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(systemdtest.MountTmpfs(t, "1m"), "state")
	store, err := OpenStore(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.disk().Close() }) // after the daemons', before the unmount
	mgr := systemdtest.Conn(t)
	start := func() (*Scheduler, *logWatch) {
		w := &logWatch{seen: make(chan struct{}, 1)}
		d := New(cfg, store, mgr)
		d.Log = slog.New(slog.NewTextHandler(w, nil))
		if err := d.Recover(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		return d, w
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// unstored checks that the job, whose outcome the daemon could not
	// store, reads as running, has answered no waiter, and keeps its unit
	// and pin loaded.
	unstored := func(d *Scheduler, r *api.Record) {
		t.Helper()
		got, err := d.Get(r.ID)
		if err != nil || got.State != api.StateRunning || got.ExitCode != nil {
			t.Errorf("job %s with its outcome not stored: %s, %v; want it running, no exit code", r.Args, summary(got), err)
		}
		if done := d.Done(r.ID); done == nil {
			t.Errorf("job %s: ended for its waiters with an outcome its record does not hold", r.Args)
		} else {
			select {
			case <-done:
				t.Errorf("job %s: a waiter was answered with an outcome its record does not hold", r.Args)
			default:
			}
		}
		for _, name := range []string{r.Unit, job.PinName(r.Unit)} {
			if !loaded(ctx, t, mgr, name) {
				t.Errorf("job %s: %s released before its outcome was stored", r.Args, name)
			}
		}
	}
	// endFull runs a job to its end with the state dir full, checks it
	// (unstored), and returns its record and the filler.
	endFull := func(d *Scheduler, w *logWatch, n int, arg string) (*api.Record, string) {
		t.Helper()
		r, err := d.Call(ctx, root, "full", []string{arg})
		if err != nil {
			t.Fatal(err)
		}
		waitOutput(t, d, r.ID, strings.Repeat("x", 9000))
		filler := fill(t, state)
		if err := os.WriteFile(filepath.Join(dir, "gate-"+arg), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		w.waitFor(ctx, t, "storing its outcome", n)
		unstored(d, r)
		return r, filler
	}
	check := func(d *Scheduler, r *api.Record) {
		t.Helper()
		got, err := d.Wait(ctx, r.ID)
		if err != nil || got.State != api.StateFailed || got.ExitCode == nil || *got.ExitCode != 7 || got.OutputTail != strings.Repeat("x", 9000) {
			t.Errorf("job %s once space is back: %s, %v; want failed, exit code 7, its output", r.Args, summary(got), err)
		}
		if stored, err := store.Get(r.ID); err != nil || stored.ExitCode == nil || *stored.ExitCode != 7 {
			t.Errorf("job %s: stored record %s, %v; want exit code 7", r.Args, summary(stored), err)
		}
		for _, name := range []string{r.Unit, job.PinName(r.Unit)} {
			for loaded(ctx, t, mgr, name) {
				if ctx.Err() != nil {
					t.Fatalf("job %s: %s still loaded after its outcome was stored", r.Args, name)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}

	d, w := start()
	r, filler := endFull(d, w, 1, "a")
	os.Remove(filler)
	check(d, r)

	r, filler = endFull(d, w, 2, "b")
	d.Close()
	os.Remove(filler)
	d, w = start()
	check(d, r)

	// Still full when the next daemon starts: its Recover keeps the unit
	// too, until there is room.
	r, filler = endFull(d, w, 1, "c")
	d.Close()
	d, w = start()
	w.waitFor(ctx, t, "storing its outcome", 1)
	unstored(d, r)
	os.Remove(filler)
	check(d, r)
}

// summary says what a test of outcomes reads of a record.
func summary(r *api.Record) string {
	if r == nil {
		return "no record"
	}
	code := "none"
	if r.ExitCode != nil {
		code = strconv.Itoa(*r.ExitCode)
	}
	return fmt.Sprintf("%s, exit code %s, %q, %d bytes of output", r.State, code, r.Message, len(r.OutputTail))
}
