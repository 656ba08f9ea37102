package scheduler

import (
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/job"
)

// retryPolicy returns op's retry rule as a job.RetryPolicy, or nil if the
// op runs once (or is nil, no longer configured).
func retryPolicy(op *config.Op) *job.RetryPolicy {
	if op == nil || op.Retry.Attempts <= 1 {
		return nil
	}
	return &job.RetryPolicy{Attempts: op.Retry.Attempts, Delay: op.Retry.Delay, MaxDelay: op.Retry.MaxDelay}
}
