package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/daemon"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/store"
	"github.com/unitrun/unitrun/internal/flock"
	"github.com/unitrun/unitrun/internal/journallog"
)

type daemonFlags struct {
	config, opsDir, socket, seqpacket, stateDir string
	podStateDir, logLevel, journalSocket        string
	dbus                                        string
	repair                                      bool
}

func newDaemonCmd(g *globals) *cobra.Command {
	f := &daemonFlags{}
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Serve allow-listed host operations over unix sockets (the host API)",
		Long: `Serve the ops of the config over an HTTP/JSON unix stream socket and a
SOCK_SEQPACKET socket, running each as a systemd unit and keeping a durable
record of every job in the state dir (see docs/hostapi.md).

Under socket activation the sockets come from systemd (LISTEN_FDS), named
"api" and "argv" by FileDescriptorName=; otherwise the daemon binds
--socket and --seqpacket with mode 0600: both defaults when neither flag is
given, else only the sockets given (--socket alone leaves the SEQPACKET
front end off). A socket's directory must exist and its path be free or
hold a socket; a socket that a live process answers on is refused, a
stale one replaced. It tells systemd
READY=1 once it serves, re-attaches to the jobs an earlier daemon left
running, and on SIGTERM stops serving without stopping any running op.

One daemon at a time holds a state dir (an flock on its file "lock"): a
second one exits 1 naming the pid that holds it, as it does when a socket
it is given is in use.

SIGHUP ("systemctl reload unitrun") reads the config and the ops dir again:
a valid config's ops apply to new calls while running jobs go on as they
were called; an invalid one is logged with its file:line errors and the
ops stay as they were. [limits] apply at the next start.

GET /metrics on the HTTP socket serves Prometheus metrics; --dbus also
serves the ops as org.unitrun.Ops1 on a D-Bus bus. Under systemd the daemon
logs to the journal with fields JOB_ID, OP, UNIT and CALLER_UID.

Each line of the state dir's records.log carries a checksum. A torn last
line, which a crash or a full disk leaves, is passed over; a damaged line
with intact ones after it stops the daemon from starting, naming the file
and the byte offset, since the damage may hide that a job ended or started.
--repair then keeps every intact record, records each unfinished job the
damage may have touched as failed with its outcome unknown (such a job is
never run again), rewrites the log, and serves.`,
		Example: `  unitrun daemon   # under unitrun.socket, as dist/systemd/unitrun.service runs it
  unitrun daemon --config ./daemon.toml --ops-dir ./ops.d --state-dir /tmp/state \
      --socket /tmp/api.sock --seqpacket /tmp/argv.sock --dbus session --log-level debug`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDaemonPaths(cmd.Flags(), f); err != nil {
				return usageError(err)
			}
			return runDaemon(cmd.Context(), g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "/etc/unitrun/daemon.toml", "operations config `FILE`")
	fl.StringVar(&f.opsDir, "ops-dir", "/etc/unitrun/ops.d", "drop-in `DIR` of *.toml op files")
	fl.StringVar(&f.socket, "socket", "", "HTTP/JSON unix socket `PATH` to bind without socket activation (default "+api.DefaultSocket+" when --seqpacket is not given either, else none)")
	fl.StringVar(&f.seqpacket, "seqpacket", "", "SEQPACKET unix socket `PATH` to bind without socket activation (default "+api.DefaultSeqpacketSocket+" when --socket is not given either, else none)")
	fl.StringVar(&f.stateDir, "state-dir", "/var/lib/unitrun", "state `DIR` holding the job records and output logs")
	fl.StringVar(&f.logLevel, "log-level", "info", "least `LEVEL` logged: debug, info, warn or error (to the journal under systemd, else to stderr)")
	fl.StringVar(&f.journalSocket, "journal-socket", journallog.DefaultSocket, "journald's native `SOCKET`")
	fl.MarkHidden("journal-socket")
	fl.StringVar(&f.dbus, "dbus", "", "also serve org.unitrun.Ops1 on `BUS`: system, session or a D-Bus address")
	fl.BoolVar(&f.repair, "repair", false, "repair a records log damaged in the middle: keep every intact record and record the jobs the damage may have touched as failed, outcome unknown, never run again")
	fl.StringVar(&f.podStateDir, "pod-state-dir", defaultStateDir, "pod state `DIR` whose pods /metrics counts by phase (\"\" counts none)")
	return cmd
}

// logLevels are the values of the daemon's --log-level.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

// daemonOptions maps each field of daemon.Options that names a path to
// its flag, for the errors of daemon.SetupError.
var daemonOptions = map[string]string{"StateDir": "--state-dir", "Socket": "--socket", "Seqpacket": "--seqpacket"}

func runDaemon(ctx context.Context, g *globals, f *daemonFlags) error {
	level, ok := logLevels[f.logLevel]
	if !ok {
		return usageError(fmt.Errorf("--log-level %q: must be debug, info, warn or error", f.logLevel))
	}
	if err := checkBusFlag(f.dbus); err != nil {
		return usageError(err)
	}
	err := daemon.Run(ctx, daemon.Options{
		ConfigFile: f.config, OpsDir: f.opsDir, StateDir: f.stateDir, Repair: f.repair, PodStateDir: f.podStateDir,
		Socket: f.socket, Seqpacket: f.seqpacket, Bus: f.dbus,
		Log:     daemon.NewLogger(level, f.journalSocket),
		Manager: g.open,
	})
	var se *daemon.SetupError
	var held *flock.HeldError
	var pe *daemon.PathError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && se.Option == "ConfigFile":
		return usageError(se.Err)
	case errors.As(err, &held):
		return &exitError{code: exitHeld, err: fmt.Errorf("--state-dir %s is held by another unitrun daemon (pid %s): one daemon at a time may use a state dir", se.Path, holderPID(held.PID))}
	case errors.Is(err, front.ErrInUse):
		return &exitError{code: exitHeld, err: fmt.Errorf("%s %s: socket %s is in use: a process answers on it", daemonOptions[se.Option], se.Path, se.Path)}
	case errors.As(err, &pe):
		return usageError(fmt.Errorf("%s %s: %v", daemonOptions[se.Option], se.Path, pe))
	case errors.As(err, &se) && daemonOptions[se.Option] != "":
		err = flagPathError(daemonOptions[se.Option], se.Path, se.Err)
		if errors.As(err, new(*store.DamageError)) {
			err = fmt.Errorf("%w; start the daemon with --repair to do so", err)
		}
		return &exitError{code: exitFailed, err: err}
	}
	return &exitError{code: exitFailed, err: err}
}

// checkDaemonPaths refuses an empty --config, which the config loader
// named no file in refusing it, an empty --state-dir, which made the
// daemon keep its records in the directory it was started in, and an
// empty --socket or --seqpacket given on the command line, which made it
// bind both default sockets as if neither flag were given.
func checkDaemonPaths(fl *pflag.FlagSet, f *daemonFlags) error {
	if f.config == "" {
		return errors.New("--config: must name a *.toml file, not be empty")
	}
	if f.stateDir == "" {
		return errors.New("--state-dir: must name a directory, not be empty")
	}
	for _, name := range []string{"socket", "seqpacket"} {
		if fl.Changed(name) && fl.Lookup(name).Value.String() == "" {
			return fmt.Errorf("--%s: must name a socket path, not be empty; leave the flag out to leave its socket off when the other flag is given", name)
		}
	}
	return nil
}

// holderPID is the pid /proc/locks names, or "unknown" for 0.
func holderPID(pid int) string {
	if pid == 0 {
		return "unknown"
	}
	return strconv.Itoa(pid)
}

// checkBusFlag refuses a --dbus value that names no bus: one that is
// not "", "system", "session" or an address of the form TRANSPORT:KEYS.
func checkBusFlag(bus string) error {
	switch bus {
	case "", "system", "session":
		return nil
	}
	if transport, _, ok := strings.Cut(bus, ":"); ok && transport != "" {
		return nil
	}
	return fmt.Errorf("--dbus %q: must be system, session or a D-Bus address such as unix:path=/run/dbus/system_bus_socket", bus)
}
