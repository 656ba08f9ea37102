package daemon

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

	sd "github.com/coreos/go-systemd/v22/daemon"
	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/scheduler"
	"github.com/unitrun/unitrun/hostapi/store"
	"github.com/unitrun/unitrun/internal/flock"
	"github.com/unitrun/unitrun/manager"
)

// Options are what Run needs to make and serve a Scheduler.
type Options struct {
	// ConfigFile and OpsDir are the ops config and its drop-in dir
	// (LoadConfig), read at the start and again on each SIGHUP.
	ConfigFile, OpsDir string
	// StateDir holds the job records and output logs (scheduler.OpenStore).
	StateDir string
	// Repair has a records log damaged in the middle repaired rather than
	// refused (scheduler.RepairStore): the jobs the damage may have touched
	// are recorded as failed, outcome unknown, and logged.
	Repair bool
	// PodStateDir is the scheduler.Scheduler's PodStateDir.
	PodStateDir string
	// Socket and Seqpacket are the paths Listen binds when systemd passed
	// no sockets.
	Socket, Seqpacket string
	// Bus, unless "", is the bus to serve the D-Bus front end on too:
	// "system", "session" or a D-Bus address.
	Bus string
	// Log is the Scheduler's Log and the front ends' (see NewLogger);
	// nil is slog.Default().
	Log *slog.Logger
	// Manager opens the connection to the manager that runs the jobs.
	Manager func(context.Context) (*manager.Conn, error)
}

// A SetupError is a setting of Options that Run could not use before it
// served anything.
type SetupError struct {
	// Option is the field of Options: ConfigFile (Err is LoadConfig's,
	// Path the config file), StateDir, Socket or Seqpacket.
	Option string
	Path   string
	Err    error
}

func (e *SetupError) Error() string { return fmt.Sprintf("%s %s: %v", e.Option, e.Path, e.Err) }
func (e *SetupError) Unwrap() error { return e.Err }

// Run is the daemon's whole life: it takes the state dir's lock
// (lockStateDir), which it holds until it returns, reads the config,
// opens the store, takes its sockets (Listen) and the manager, re-attaches
// to the jobs an earlier daemon left (Recover) and prunes old records,
// then serves the HTTP front end and the SEQPACKET one (those Listen
// bound) and, with Bus, the D-Bus one, and tells
// systemd READY=1. While it serves, it prunes old records hourly and as
// jobs end (one prune at a time, see Scheduler.PruneHourly), and on SIGHUP
// reads the config again (reload). When ctx ends or a front end fails, it
// tells systemd STOPPING=1, stops serving, closes the Scheduler and then
// the store (which makes every line it wrote durable); running ops go on
// in systemd, for the next daemon to re-attach to.
//
// A setting that cannot be used before serving is a *SetupError; Run
// returns the error of a front end that failed, nil once ctx ended.
func Run(ctx context.Context, o Options) error {
	// From the start, so that a SIGHUP never ends the daemon, and one
	// sent while it starts is a reload once it serves.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	// Bad input is refused before anything is created; the state dir's
	// lock is taken before anything there is read.
	cfg, err := config.Load(o.ConfigFile, o.OpsDir)
	if err != nil {
		return &SetupError{Option: "ConfigFile", Path: o.ConfigFile, Err: err}
	}
	log.Debug(fmt.Sprintf("config %s and ops dir %s: %d ops", o.ConfigFile, o.OpsDir, len(cfg.Ops)))
	if err := checkSocketPaths(o.Socket, o.Seqpacket); err != nil {
		return err
	}
	unlock, err := lockStateDir(o.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	d, records, mgr, api, argv, err := open(ctx, o, cfg, log)
	if err != nil {
		return err
	}
	defer mgr.Close()
	if err := d.Recover(); err != nil {
		log.Error(fmt.Sprintf("recovering jobs: %v", err))
	}
	if err := d.Prune(); err != nil {
		log.Error(fmt.Sprintf("pruning records: %v", err))
	}
	srv := front.NewHTTPServer(d)
	fronts := front.NewServer(d, log)
	served := make(chan error, 3)
	if o.Bus != "" {
		// The sockets are the daemon's own faces: a bus that cannot be
		// reached at start, or a name that cannot be claimed, turns the
		// D-Bus front end off, said in the log, and the sockets are
		// served. A bus lost later ends the daemon, for systemd to
		// restart it onto the bus again.
		if bus, err := serveBus(d, o.Bus); err != nil {
			log.Error(fmt.Sprintf("D-Bus front end off: %v", err))
		} else {
			defer bus.Close()
			go func() {
				<-bus.Context().Done()
				served <- fmt.Errorf("--dbus %s: the bus connection closed", o.Bus)
			}()
		}
	}
	if api != nil {
		go func() { served <- fronts.ServeHTTP(srv, api) }()
	}
	if argv != nil {
		go func() { served <- fronts.ServeSeqpacket(argv) }()
	}
	pruning, stopPruning := context.WithCancel(ctx)
	defer stopPruning()
	go d.PruneHourly(pruning)
	sd.SdNotify(false, sd.SdNotifyReady)
loop:
	for {
		select {
		case <-hup:
			reload(d, o)
		case err = <-served:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	sd.SdNotify(false, sd.SdNotifyStopping)
	stopPruning()
	d.Close()
	srv.Close()
	if argv != nil {
		argv.Close()
	}
	// After the Scheduler's last write: what it wrote without a sync
	// is made durable.
	if cerr := records.Close(); cerr != nil {
		log.Error(fmt.Sprintf("closing the records log: %v", cerr))
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// open opens the store (repairing it with o.Repair), takes the sockets
// (Listen) and opens the manager, in this order, and returns the Scheduler of
// cfg on them, and the store, for Run to close after the Scheduler; on an
// error it closes what it opened.
func open(ctx context.Context, o Options, cfg *config.Config, log *slog.Logger) (_ *scheduler.Scheduler, _ *scheduler.Store, _ *manager.Conn, api, argv net.Listener, err error) {
	var store *scheduler.Store
	if o.Repair {
		var repaired []string
		store, repaired, err = scheduler.RepairStore(o.StateDir)
		for _, id := range repaired {
			log.Warn(fmt.Sprintf("repair: job %s: recorded as failed, outcome unknown: the damaged records log may have held its later records; it is not run again", id))
		}
	} else {
		store, err = scheduler.OpenStore(o.StateDir)
	}
	if err != nil {
		return nil, nil, nil, nil, nil, &SetupError{Option: "StateDir", Path: o.StateDir, Err: err}
	}
	if api, argv, err = Listen(o.Socket, o.Seqpacket); err != nil {
		store.Close()
		return nil, nil, nil, nil, nil, err
	}
	mgr, err := o.Manager(context.WithoutCancel(ctx))
	if err != nil {
		for _, l := range []net.Listener{api, argv} {
			if l != nil {
				l.Close()
			}
		}
		store.Close()
		return nil, nil, nil, nil, nil, err
	}
	d := scheduler.New(cfg, store, mgr)
	d.PodStateDir = o.PodStateDir
	d.Log = log
	return d, store, mgr, api, argv, nil
}

// lockFile is the file of the state dir whose flock the daemon holds.
const lockFile = "lock"

// lockStateDir takes the lock of the state dir dir: an flock on its file
// "lock", which the daemon holds for as long as it runs, so that no
// second daemon reads or writes the records while it does. It first
// checks that dir and its output directory, if there, may be trusted, and
// creates dir (mode 0700) when it is missing, as store.Open does
// (store.EnsureDir): a state dir that fails is refused before anything is
// created in it or for it. A refused dir,
// or a lock another process holds, is a *SetupError of StateDir (the
// latter wrapping the *flock.HeldError that names the holder).
func lockStateDir(dir string) (unlock func(), err error) {
	if err := store.EnsureDir(dir); err != nil {
		return nil, &SetupError{Option: "StateDir", Path: dir, Err: err}
	}
	unlock, err = flock.TryLock(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, &SetupError{Option: "StateDir", Path: dir, Err: err}
	}
	return unlock, nil
}

// reload reads the ops config again and gives its ops to d, or logs why
// it cannot and leaves d's ops as they are. It tells systemd that it
// reloads, then that it is ready again.
func reload(d *scheduler.Scheduler, o Options) {
	sd.SdNotify(false, sd.SdNotifyReloading)
	defer sd.SdNotify(false, sd.SdNotifyReady)
	cfg, err := config.Load(o.ConfigFile, o.OpsDir)
	if err != nil {
		d.Log.Error(fmt.Sprintf("reload: the ops stay as they were: %v", err))
		return
	}
	limitsDiffer := d.Reload(cfg)
	d.Log.Info(fmt.Sprintf("reload: config %s and ops dir %s: %d ops", o.ConfigFile, o.OpsDir, len(cfg.Ops)))
	if limitsDiffer {
		d.Log.Warn(fmt.Sprintf("reload: the [limits] of %s changed; they apply when the daemon restarts", o.ConfigFile))
	}
}

// serveBus connects to bus and serves d's D-Bus front end there.
func serveBus(d *scheduler.Scheduler, bus string) (*dbus.Conn, error) {
	conn, err := connectBus(bus)
	if err != nil {
		return nil, err
	}
	if err := front.ServeDBus(d, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("--dbus %s: %w", bus, err)
	}
	return conn, nil
}

// connectBus connects to bus: "system", "session", or a D-Bus address
// such as unix:path=/run/dbus/system_bus_socket.
func connectBus(bus string) (*dbus.Conn, error) {
	var conn *dbus.Conn
	var err error
	switch bus {
	case "system":
		conn, err = dbus.ConnectSystemBus()
	case "session":
		conn, err = dbus.ConnectSessionBus()
	default:
		conn, err = dbus.Connect(bus)
	}
	if err != nil {
		return nil, fmt.Errorf("--dbus %s: %w", bus, err)
	}
	return conn, nil
}
