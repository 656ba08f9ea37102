package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/hostapi"
	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/internal/journallog"
)

type daemonFlags struct {
	config, opsDir, socket, seqpacket, stateDir string
	podStateDir, logLevel, journalSocket        string
	dbus                                        string
}

// pruneEvery is how often the daemon prunes old job records.
const pruneEvery = time.Hour

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
--socket and --seqpacket with mode 0600. It tells systemd READY=1 once it
serves, re-attaches to the jobs an earlier daemon left running, and on
SIGTERM stops serving without stopping any running op.

SIGHUP ("systemctl reload unitrun") reads the config and the ops dir again:
a valid config's ops apply to new calls while running jobs go on as they
were called; an invalid one is logged with its file:line errors and the
ops stay as they were. [limits] apply at the next start.

GET /metrics on the HTTP socket serves Prometheus metrics; --dbus also
serves the ops as org.unitrun.Ops1 on a D-Bus bus. Under systemd the daemon
logs to the journal with fields JOB_ID, OP, UNIT and CALLER_UID.`,
		Example: `  unitrun daemon   # under unitrun.socket, as dist/systemd/unitrun.service runs it
  unitrun daemon --config ./daemon.toml --ops-dir ./ops.d --state-dir /tmp/state \
      --socket /tmp/api.sock --seqpacket /tmp/argv.sock --dbus session --log-level debug`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDaemon(cmd.Context(), g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "/etc/unitrun/daemon.toml", "operations config `FILE`")
	fl.StringVar(&f.opsDir, "ops-dir", "/etc/unitrun/ops.d", "drop-in `DIR` of *.toml op files")
	fl.StringVar(&f.socket, "socket", "", "HTTP/JSON unix socket `PATH` to bind without socket activation (default /run/unitrun/api.sock)")
	fl.StringVar(&f.seqpacket, "seqpacket", "", "SEQPACKET unix socket `PATH` to bind without socket activation (default /run/unitrun/argv.sock)")
	fl.StringVar(&f.stateDir, "state-dir", "/var/lib/unitrun", "state `DIR` holding the job records and output logs")
	fl.StringVar(&f.logLevel, "log-level", "info", "least `LEVEL` logged: debug, info, warn or error (to the journal under systemd, else to stderr)")
	fl.StringVar(&f.journalSocket, "journal-socket", journallog.DefaultSocket, "journald's native `SOCKET`")
	fl.MarkHidden("journal-socket")
	fl.StringVar(&f.dbus, "dbus", "", "also serve org.unitrun.Ops1 on `BUS`: system, session or a D-Bus address")
	fl.StringVar(&f.podStateDir, "pod-state-dir", defaultStateDir, "pod state `DIR` whose pods /metrics counts by phase (\"\" counts none)")
	return cmd
}

func runDaemon(ctx context.Context, g *globals, f *daemonFlags) error {
	// From the start, so that a SIGHUP never ends the daemon.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	logger, err := daemonLogger(f.logLevel, f.journalSocket)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := checkBusFlag(f.dbus); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	cfg, err := config.Load(f.config, f.opsDir)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	logger.Debug(fmt.Sprintf("config %s and ops dir %s: %d ops", f.config, f.opsDir, len(cfg.Ops)))
	store, err := hostapi.OpenStore(f.stateDir)
	if err != nil {
		return &exitError{code: exitFailed, err: flagPathError("--state-dir", f.stateDir, err)}
	}
	api, argv, err := daemonListeners(f)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	mgr, err := g.open(context.WithoutCancel(ctx))
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	defer mgr.Close()
	d := hostapi.NewDaemon(cfg, store, mgr)
	d.PodStateDir = f.podStateDir
	d.Log = logger
	d.Logf = func(format string, args ...any) { logger.Error(fmt.Sprintf(format, args...)) }
	if err := d.Recover(); err != nil {
		logger.Error(fmt.Sprintf("recovering jobs: %v", err))
	}
	if err := d.Prune(); err != nil {
		logger.Error(fmt.Sprintf("pruning records: %v", err))
	}
	srv := hostapi.NewHTTPServer(d)
	served := make(chan error, 3)
	if f.dbus != "" {
		// The sockets are the daemon's own faces: a bus that cannot be
		// reached at start, or a name that cannot be claimed, turns the
		// D-Bus front end off, said in the log, and the sockets are
		// served. A bus lost later ends the daemon, for systemd to
		// restart it onto the bus again.
		if bus, err := serveBus(d, f.dbus); err != nil {
			logger.Error(fmt.Sprintf("D-Bus front end off: %v", err))
		} else {
			defer bus.Close()
			go func() {
				<-bus.Context().Done()
				served <- fmt.Errorf("--dbus %s: the bus connection closed", f.dbus)
			}()
		}
	}
	go func() { served <- d.ServeHTTP(srv, api) }()
	go func() { served <- d.ServeSeqpacket(argv) }()
	daemon.SdNotify(false, daemon.SdNotifyReady)
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
loop:
	for {
		select {
		case <-prune.C:
			if err := d.Prune(); err != nil {
				logger.Error(fmt.Sprintf("pruning records: %v", err))
			}
		case <-hup:
			reload(d, f, logger)
		case err = <-served:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	daemon.SdNotify(false, daemon.SdNotifyStopping)
	// Running ops go on in systemd; the next daemon re-attaches to them.
	d.Close()
	srv.Close()
	argv.Close()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return &exitError{code: exitFailed, err: err}
	}
	return nil
}

// reload reads the ops config again and gives its ops to d, or logs why
// it cannot and leaves d's ops as they are. It tells systemd that it
// reloads, then that it is ready again.
func reload(d *hostapi.Daemon, f *daemonFlags, logger *slog.Logger) {
	daemon.SdNotify(false, daemon.SdNotifyReloading)
	defer daemon.SdNotify(false, daemon.SdNotifyReady)
	cfg, err := config.Load(f.config, f.opsDir)
	if err != nil {
		logger.Error(fmt.Sprintf("reload: the ops stay as they were: %v", err))
		return
	}
	limitsDiffer := d.Reload(cfg)
	logger.Info(fmt.Sprintf("reload: config %s and ops dir %s: %d ops", f.config, f.opsDir, len(cfg.Ops)))
	if limitsDiffer {
		logger.Warn(fmt.Sprintf("reload: the [limits] of %s changed; they apply when the daemon restarts", f.config))
	}
}

// daemonListeners returns the sockets systemd passed, or binds the paths
// of the flags when systemd passed none. A passed socket named "api" (by
// FileDescriptorName=) is the HTTP one and one named "argv" the SEQPACKET
// one; a socket with another name counts by its type, stream or seqpacket,
// so that one socket unit with both listeners works too.
func daemonListeners(f *daemonFlags) (api net.Listener, argv *net.UnixListener, err error) {
	named, err := activation.ListenersWithNames()
	if err != nil {
		return nil, nil, fmt.Errorf("socket activation: %w", err)
	}
	if len(named) > 0 {
		var apis, argvs []net.Listener
		for name, ls := range named {
			for _, l := range ls {
				switch {
				case name == "api", name != "argv" && l.Addr().Network() == "unix":
					apis = append(apis, l)
				default:
					argvs = append(argvs, l)
				}
			}
		}
		if len(apis) != 1 || len(argvs) != 1 {
			return nil, nil, fmt.Errorf("socket activation: want one socket named %q (or a stream socket) and one named %q (or a SOCK_SEQPACKET socket), got %d and %d", "api", "argv", len(apis), len(argvs))
		}
		ul, ok := argvs[0].(*net.UnixListener)
		if !ok || ul.Addr().Network() != "unixpacket" {
			return nil, nil, fmt.Errorf("socket activation: socket %q is %s, want a SOCK_SEQPACKET unix socket (ListenSequentialPacket=)", "argv", argvs[0].Addr().Network())
		}
		return apis[0], ul, nil
	}
	// No moment with a socket others may connect to before its chmod.
	defer unix.Umask(unix.Umask(0o077))
	sock, seq := f.socket, f.seqpacket
	if sock == "" {
		sock = "/run/unitrun/api.sock"
	}
	if seq == "" {
		seq = "/run/unitrun/argv.sock"
	}
	for _, s := range []struct{ flag, path string }{{"--socket", sock}, {"--seqpacket", seq}} {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
			return nil, nil, flagPathError(s.flag, s.path, err)
		}
	}
	hl, err := hostapi.ListenUnix("unix", sock, 0o600)
	if err != nil {
		return nil, nil, flagPathError("--socket", sock, err)
	}
	pl, err := hostapi.ListenUnix("unixpacket", seq, 0o600)
	if err != nil {
		hl.Close()
		return nil, nil, flagPathError("--seqpacket", seq, err)
	}
	return hl, pl, nil
}
