package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
)

// opPollInterval is how often "op call" reads a queued job's record.
const opPollInterval = 100 * time.Millisecond

// follow follows the job of op that call waits for: it reports on stderr that the job is
// queued, then started, streams its output (to stdout, or to stderr with
// asJSON) and returns its final record. On a terminal a status line tells
// how long the job has been queued or running, updated every second and
// cleared at the end. quiet reports nothing.
func follow(cmd *cobra.Command, c *client.Client, call *client.WaitingCall, op string, asJSON, quiet bool) (*api.Record, error) {
	ctx := cmd.Context()
	id := call.ID
	out := cmd.OutOrStdout()
	if asJSON {
		out = cmd.ErrOrStderr()
	}
	p := newProgress(cmd.ErrOrStderr(), out, quiet)
	label := fmt.Sprintf("job %s (op %s)", id, op)
	var mu sync.Mutex
	state, since := api.StateQueued, time.Now()
	set := func(s api.State) {
		mu.Lock()
		state, since = s, time.Now()
		mu.Unlock()
	}
	line := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return []string{fmt.Sprintf("%s: %s for %s", label, p.err.paint(string(state)), elapsed(time.Since(since)))}
	}
	stop := p.ticking(line)
	defer stop()
	// Waited for at once, not once the output has ended: should the
	// call's connection break (the daemon restarted), the call waits
	// again on the next daemon from this process, which then holds the
	// job for its on_disconnect while the output streams.
	type ended struct {
		rec *api.Record
		err error
	}
	final := make(chan ended, 1)
	go func() {
		rec, err := call.Wait(ctx)
		final <- ended{rec, err}
	}()
	p.event("%s: queued", label)
	rec, err := waitStarted(ctx, c, id)
	if err != nil {
		return nil, &exitError{code: exitFailed, err: err}
	}
	if rec.StartedAt != nil {
		p.event("%s: started", label)
		set(api.StateRunning)
		if p.live() {
			p.draw(line())
		}
	}
	if err := c.Logs(ctx, id, true, writer(p, out)); err != nil && ctx.Err() != nil {
		return nil, &exitError{code: exitFailed, err: err}
	}
	f := <-final
	if f.err != nil {
		return nil, &exitError{code: exitFailed, err: f.err}
	}
	return f.rec, nil
}

// waitStarted polls job id's record until it is no longer queued.
func waitStarted(ctx context.Context, c *client.Client, id string) (*api.Record, error) {
	t := time.NewTicker(opPollInterval)
	defer t.Stop()
	for {
		rec, err := c.Job(ctx, id)
		if err != nil || rec.State != api.StateQueued {
			return rec, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
