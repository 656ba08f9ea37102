package job

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// RetryPolicy reruns a command, each time as a fresh unit, after outcomes
// it names. The Status of the last run carries the number of attempts.
type RetryPolicy struct {
	// Attempts is the total number of runs allowed, at least 1.
	Attempts int
	// Delay is the wait before the second run; each later wait doubles,
	// up to MaxDelay when MaxDelay is positive.
	Delay    time.Duration
	MaxDelay time.Duration
	// JobResults lists the start-job results that retry (failed, timeout,
	// dependency, ...); nil means every job failure except "canceled".
	JobResults []string
	// ExitCodes lists the exit statuses (128+N for signal N) that retry; nil
	// means every failed run. A run that timed out retries unless ExitCodes
	// is set and lacks its status.
	ExitCodes []int
}

func (p *RetryPolicy) check() error {
	if p.Attempts < 1 {
		return fmt.Errorf("job: Retry.Attempts %d: must be at least 1", p.Attempts)
	}
	if p.Delay < 0 || p.MaxDelay < 0 {
		return errors.New("job: Retry.Delay and Retry.MaxDelay must not be negative")
	}
	return nil
}

// Retries reports whether err, the outcome of a run (as Wait returns it),
// asks for another run.
func (p *RetryPolicy) Retries(err error) bool {
	var je *JobError
	if errors.As(err, &je) {
		if p.JobResults == nil {
			return je.Result != "canceled"
		}
		return slices.Contains(p.JobResults, je.Result)
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return p.ExitCodes == nil || slices.Contains(p.ExitCodes, ee.ExitCode)
	}
	return false
}

// Backoff returns the wait before the next run, after the given number
// of runs (at least 1).
func (p *RetryPolicy) Backoff(runs int) time.Duration {
	d := p.Delay
	for i := 1; i < runs; i++ {
		d *= 2
		if p.MaxDelay > 0 && d >= p.MaxDelay {
			return p.MaxDelay
		}
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		return p.MaxDelay
	}
	return d
}
