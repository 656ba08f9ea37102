package hostapi

import (
	"fmt"
	"sync"
	"time"
)

// logEvery is the least time between two lines the daemon logs for the
// same reason of refusal: a caller, or a full disk, that has every call
// refused must not fill the journal.
const logEvery = time.Second

// logLimiter lets through at most one line per logEvery for each reason
// and counts the lines it holds back, so that the next line let through
// can say how many there were.
type logLimiter struct {
	mu   sync.Mutex
	last map[string]time.Time // when a line of the reason was last let through
	held map[string]int       // lines of the reason held back since then
}

// allow reports whether a line for reason may be logged at now and, if
// so, how many lines of the reason were held back since the last one.
func (l *logLimiter) allow(reason string, now time.Time) (ok bool, held int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.held = make(map[string]time.Time), make(map[string]int)
	}
	if last, seen := l.last[reason]; seen && now.Sub(last) < logEvery {
		l.held[reason]++
		return false, 0
	}
	held = l.held[reason]
	l.last[reason] = now
	delete(l.held, reason)
	return true, held
}

// warnLimited logs msg with attrs at level warn, unless a line of the same
// reason was logged less than logEvery ago; the line let through next
// says how many were held back (and has the attribute suppressed).
func (d *Daemon) warnLimited(reason, msg string, attrs ...any) {
	ok, held := d.logLimit.allow(reason, time.Now())
	if !ok {
		return
	}
	if held > 0 {
		msg += fmt.Sprintf(" (and %d more like it since the last such line, not logged)", held)
		attrs = append(attrs, "suppressed", held)
	}
	d.Log.Warn(msg, attrs...)
}
