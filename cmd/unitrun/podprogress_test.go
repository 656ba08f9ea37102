package main

import (
	"strings"
	"sync"
	"testing"
)

// Output written while the status line ticks lands whole, with the line
// lifted off around it, and the line is gone once stopped.
func TestProgressLiftsBlockAroundOutput(t *testing.T) {
	// The progress's lock orders every write to the shared screen.
	var screen strings.Builder
	p := &progress{err: &term{w: &screen, tty: true, cursor: true}, out: &screen, share: true}
	stop := p.ticking(func() []string { return []string{"status"} })
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				p.Write([]byte("line\n"))
			}
		}()
	}
	wg.Wait()
	stop()
	got := screen.String()
	if n := strings.Count(got, "line\n"); n != 200 {
		t.Errorf("%d output lines arrived, want 200", n)
	}
	// Each status line drawn is erased before anything else is written.
	if draws, erases := strings.Count(got, "status\n"), strings.Count(got, "\x1b[1F\x1b[J"); draws != erases || draws < 200 {
		t.Errorf("status line drawn %d times, erased %d times", draws, erases)
	}
	if !strings.HasSuffix(got, "status\n\x1b[1F\x1b[J") {
		t.Errorf("screen does not end with the status line erased: %q", got[max(0, len(got)-40):])
	}
	p.Write([]byte("partial"))
	p.draw([]string{"status"})
	if tail := screen.String()[len(got):]; tail != "partial" {
		t.Errorf("a block drawn under a line not ended: %q", tail)
	}
}
