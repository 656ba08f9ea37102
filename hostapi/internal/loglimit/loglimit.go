// Package loglimit holds the daemon's logs of refusals to a line a second
// for each reason: a caller, or a full disk, that has every call or
// connection refused must not fill the journal.
package loglimit

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Every is the least time between two lines logged for the same reason.
const Every = time.Second

// A Limiter lets through at most one line per Every for each reason and
// counts the lines it holds back, so that the next line let through can
// say how many there were. The zero Limiter is ready to use.
type Limiter struct {
	mu   sync.Mutex
	last map[string]time.Time // when a line of the reason was last let through
	held map[string]int       // lines of the reason held back since then
}

// Allow reports whether a line for reason may be logged at now and, if
// so, how many lines of the reason were held back since the last one.
func (l *Limiter) Allow(reason string, now time.Time) (ok bool, held int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.held = make(map[string]time.Time), make(map[string]int)
	}
	if last, seen := l.last[reason]; seen && now.Sub(last) < Every {
		l.held[reason]++
		return false, 0
	}
	held = l.held[reason]
	l.last[reason] = now
	delete(l.held, reason)
	return true, held
}

// Warn logs msg with attrs to log at level warn, unless a line of the
// same reason was logged less than Every ago; the line let through next
// says how many were held back (and has the attribute suppressed).
func (l *Limiter) Warn(log *slog.Logger, reason, msg string, attrs ...any) {
	ok, held := l.Allow(reason, time.Now())
	if !ok {
		return
	}
	if held > 0 {
		msg += fmt.Sprintf(" (and %d more like it since the last such line, not logged)", held)
		attrs = append(attrs, "suppressed", held)
	}
	log.Warn(msg, attrs...)
}
