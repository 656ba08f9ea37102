package scheduler_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestStateDirFull runs the daemon binary with its state directory on a
// 4 MiB tmpfs, fills it, and checks that new calls on both front ends are
// refused with no_space while the records already there stay intact and
// readable; once space is freed, a restarted daemon opens the store, reads
// every record and runs jobs again.
func TestStateDirFull(t *testing.T) {
	ctx := faultCtx(t, 2*time.Minute)
	d := systemdtest.NewDaemon(t, reloadConfig)
	state := filepath.Join(d.Dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "unitrun-test-state", state).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	// Registered before Start, so it runs after the daemon has stopped.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", state).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", state, err, out)
		}
	})
	d.Start(t)
	c := client.New(d.API)
	var before []*api.Record
	for i, code := range []string{"0", "3", "7"} {
		id, err := c.Call(ctx, "exit", []string{string(rune('1' + i)), code, "0"})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := c.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, rec)
	}

	filler := filepath.Join(state, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the state dir: %v", err)
			}
			break
		}
	}
	f.Close()

	_, err = c.Call(ctx, "exit", []string{"9", "0", "0"})
	var he *api.Error
	if !errors.As(err, &he) || he.Code != api.CodeNoSpace {
		t.Errorf("HTTP call with the state dir full: %v, want code %s", err, api.CodeNoSpace)
	}
	ok, id, msg, err := seqCall(ctx, d.Argv, seqRequest(t, "exit", "9", "0", "0"))
	if err != nil || ok || id != "" || !strings.HasPrefix(msg, api.CodeNoSpace+": ") {
		t.Errorf("SEQPACKET call with the state dir full: %v %q %q, %v", ok, id, msg, err)
	}
	sameRecords := func(when string) {
		t.Helper()
		recs, err := c.Jobs(ctx)
		if err != nil || len(recs) != len(before) {
			t.Fatalf("%s: %d records, %v: want %d", when, len(recs), err, len(before))
		}
		for _, want := range before {
			got, err := c.Job(ctx, want.ID)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: record %s: %+v, %v: want it unchanged, %+v", when, want.ID, got, err, want)
			}
		}
	}
	sameRecords("state dir full")

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	d.Cmd.Process.Signal(syscall.SIGTERM)
	if err := d.Cmd.Wait(); err != nil {
		t.Fatalf("daemon after SIGTERM: %v", err)
	}
	d.Start(t)
	sameRecords("after freeing space and a restart")
	id, err = c.Call(ctx, "exit", []string{"9", "5", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := c.Wait(ctx, id); err != nil || rec.ExitCode == nil || *rec.ExitCode != 5 {
		t.Errorf("job after freeing space: %+v, %v: want exit status 5", rec, err)
	}
}
