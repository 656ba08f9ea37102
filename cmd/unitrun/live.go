package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress reports how a long command is getting on, on stderr: on a
// terminal as a block of lines redrawn in place, elsewhere as one
// timestamped line per event. A nil *progress (-q) reports nothing.
type progress struct {
	mu    sync.Mutex
	err   *term     // where progress goes
	out   io.Writer // the command's output, on the same terminal when shared
	share bool      // out is a terminal too: erase the block around output
	block []string  // the lines drawn last
	drawn int       // how many of them are on the screen
	midLn bool      // output ended without a newline: do not draw under it
}

// newProgress returns progress reported on stderr, for a command whose
// output goes to out, or nil if quiet.
func newProgress(stderr, out io.Writer, quiet bool) *progress {
	if quiet {
		return nil
	}
	p := &progress{err: newTerm(stderr), out: out}
	p.share = p.live() && newTerm(out).tty
	return p
}

// live reports whether progress is drawn in place: on a terminal that
// moves its cursor.
func (p *progress) live() bool { return p != nil && p.err.tty && p.err.cursor }

// stampLayout is the time that begins each line of progress.
const stampLayout = "2006-01-02T15:04:05.000Z"

// event prints one line, starting with the time in UTC, unless progress
// is drawn in place, where the block tells the same.
func (p *progress) event(format string, args ...any) {
	if p == nil || p.live() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.err.w, "%s %s\n", time.Now().UTC().Format(stampLayout), fmt.Sprintf(format, args...))
}

// draw replaces the block on the terminal with lines, each cut to the
// terminal's width.
func (p *progress) draw(lines []string) {
	if !p.live() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.block = lines
	p.erase()
	p.paint()
}

// clear removes the block from the terminal.
func (p *progress) clear() {
	if !p.live() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.block = nil
	p.erase()
}

// erase moves up over the block drawn last and clears to the end of the
// screen.
func (p *progress) erase() {
	if p.drawn > 0 {
		fmt.Fprintf(p.err.w, "\x1b[%dF\x1b[J", p.drawn)
		p.drawn = 0
	}
}

// paint draws the block where the cursor is, unless the command's output
// on the same terminal left a line unfinished there.
func (p *progress) paint() {
	if p.midLn && p.share {
		return
	}
	var b strings.Builder
	for _, l := range p.block {
		b.WriteString(cut(l, p.err.width))
		b.WriteByte('\n')
	}
	io.WriteString(p.err.w, b.String())
	p.drawn = len(p.block)
}

// cut shortens line to width visible runes (escape sequences do not
// count), 0 meaning no limit.
func cut(line string, width int) string {
	if width <= 0 {
		return line
	}
	n, esc := 0, false
	for i, r := range line {
		switch {
		case r == '\x1b':
			esc = true
		case esc:
			esc = r < '@' || r > '~' || r == '['
		default:
			if n++; n >= width {
				if strings.Contains(line[:i], "\x1b") {
					return line[:i] + reset
				}
				return line[:i]
			}
		}
	}
	return line
}

// Write passes the command's output on to out, lifting the block off the
// terminal around it when they share one.
func (p *progress) Write(b []byte) (int, error) {
	if !p.live() || !p.share {
		return p.out.Write(b)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	n, err := p.out.Write(b)
	if len(b) > 0 {
		p.midLn = !bytes.HasSuffix(b, []byte("\n"))
	}
	p.paint()
	return n, err
}

// writer is where the command's output goes: through p, or straight to
// out when nothing is reported.
func writer(p *progress, out io.Writer) io.Writer {
	if p == nil {
		return out
	}
	return p
}

// elapsed formats a duration for the block, to the second.
func elapsed(d time.Duration) string {
	return d.Truncate(time.Second).String()
}

// ticking draws the block that lines returns now and every second after,
// until the returned stop is called, which clears it. Off a terminal it
// draws nothing.
func (p *progress) ticking(lines func() []string) (stop func()) {
	if !p.live() {
		return func() {}
	}
	p.draw(lines())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			p.draw(lines())
		}
	}()
	return func() { close(done); wg.Wait(); p.clear() }
}
