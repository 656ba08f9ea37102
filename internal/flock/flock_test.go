package flock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A second Lock of a locked path waits until the first is released, and
// gives up when its context ends.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a locked path: %v, want the context's end", err)
	}
	got := make(chan error, 1)
	go func() {
		unlock, err := Lock(context.Background(), path)
		if err == nil {
			unlock()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("Lock once the first is released: %v", err)
	}
}

// Goroutines that lock one path hold it one at a time, each once.
func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	var held, most, done int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			unlock, err := Lock(context.Background(), path)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			held++
			most = max(most, held)
			mu.Unlock()
			time.Sleep(100 * time.Microsecond)
			mu.Lock()
			held--
			done++
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if most != 1 || done != 50 {
		t.Fatalf("%d goroutines held the lock at once, %d of 50 took it; want 1 and 50", most, done)
	}
}

// The lock excludes another process too: a flock(1) holding the file
// makes Lock wait until it lets go, once its command has written a file.
func TestLockOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	marker := filepath.Join(filepath.Dir(path), "marker")
	holder := exec.Command("flock", path, "sh", "-c", `sleep 0.3; touch "$1"`, "sh", marker)
	if err := holder.Start(); err != nil {
		t.Skipf("flock(1) cannot run here: %v", err)
	}
	// Wait until the holder has the lock.
	for {
		g, _ := os.Open(path)
		err := syscall.Flock(int(g.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		g.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	unlock, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("Lock returned while flock(1) held the file: %v", err)
	}
	if err := holder.Wait(); err != nil {
		t.Fatalf("flock holder: %v", err)
	}
}

// TryLock of a file another open file holds fails at once with a
// *HeldError naming the holder's pid (here, this process), and takes the
// lock once it is released.
func TestTryLockNamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	var he *HeldError
	if _, err := TryLock(path); !errors.As(err, &he) || he.PID != os.Getpid() || he.Path != path {
		t.Fatalf("TryLock of a held lock: %v, want a *HeldError naming %s and pid %d", err, path, os.Getpid())
	}
	unlock()
	unlock, err = TryLock(path)
	if err != nil {
		t.Fatalf("TryLock once released: %v", err)
	}
	unlock()
}
