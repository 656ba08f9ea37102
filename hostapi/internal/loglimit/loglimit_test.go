package loglimit

import (
	"testing"
	"time"
)

// TestLogLimiter lets one line a second through for each reason and
// counts those it holds back for the next.
func TestLogLimiter(t *testing.T) {
	var l Limiter
	t0 := time.Now()
	steps := []struct {
		reason string
		at     time.Duration
		ok     bool
		held   int
	}{
		{"call no_space", 0, true, 0},
		{"call no_space", 10 * time.Millisecond, false, 0},
		{"call busy", 20 * time.Millisecond, true, 0},
		{"call no_space", 999 * time.Millisecond, false, 0},
		{"call no_space", time.Second, true, 2},
		{"call no_space", 2500 * time.Millisecond, true, 0},
	}
	for _, s := range steps {
		if ok, held := l.Allow(s.reason, t0.Add(s.at)); ok != s.ok || held != s.held {
			t.Errorf("%s at %v: allowed %v with %d held, want %v with %d", s.reason, s.at, ok, held, s.ok, s.held)
		}
	}
}
