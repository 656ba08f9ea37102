// Command node-agent is the smallest node agent that runs host work through
// unitrun: it calls one allow-listed operation of the host's unitrun daemon
// over the socket mounted into its container, streams the operation's
// output, and exits with the operation's exit status. A cluster runs it as
// a DaemonSet (see daemonset.yaml and docs/kubernetes.md); a real agent
// calls the same client from its own control loop.
//
// Usage: node-agent [-socket PATH] OP [ARGS...]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
)

func main() {
	socket := flag.String("socket", envOr("UNITRUN_SOCKET", api.DefaultSocket), "the unitrun daemon's socket")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: node-agent [-socket PATH] OP [ARGS...]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, client.New(*socket), flag.Arg(0), flag.Args()[1:]))
}

// run calls op and returns the status to exit with.
func run(ctx context.Context, c *client.Client, op string, args []string) int {
	id, err := c.Call(ctx, op, args)
	if err != nil {
		var e *api.Error
		if errors.As(err, &e) {
			fmt.Fprintf(os.Stderr, "node-agent: %s refused: %s (%s)\n", op, e.Message, e.Code)
		} else {
			fmt.Fprintf(os.Stderr, "node-agent: %s: %v\n", op, err)
		}
		return 1
	}
	// The op runs in a systemd unit on the host, not in this container:
	// if the agent is restarted, Wait on the same id picks the outcome up.
	if err := c.Logs(ctx, id, true, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "node-agent: logs of %s: %v\n", id, err)
	}
	rec, err := c.Wait(ctx, id)
	if err != nil {
		fmt.Fprintf(os.Stderr, "node-agent: wait for %s: %v\n", id, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "node-agent: %s %s: %s (result %s)", op, rec.ID, rec.State, rec.Result)
	if rec.RebootRequired {
		fmt.Fprint(os.Stderr, ", reboot required")
	}
	fmt.Fprintln(os.Stderr)
	switch {
	case rec.State == api.StateSucceeded:
		return 0
	case rec.ExitCode != nil:
		return *rec.ExitCode
	default:
		return 1
	}
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
