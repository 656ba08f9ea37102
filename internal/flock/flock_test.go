package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A second Lock of a locked file waits until the first is released, and
// gives up when its context ends.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	first := open()
	if err := Lock(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := Lock(ctx, open()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a locked file: %v, want the context's end", err)
	}
	got := make(chan error, 1)
	second := open()
	go func() { got <- Lock(context.Background(), second) }()
	first.Close()
	if err := <-got; err != nil {
		t.Fatalf("Lock once the first is released: %v", err)
	}
	second.Close()
}
