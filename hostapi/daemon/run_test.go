package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/client"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/hostapi/store"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/manager"
)

// runOptions returns Options for Run on a config of the test ops, a state
// dir and sockets in a temp dir, and the manager of the test.
func runOptions(t *testing.T) Options {
	t.Helper()
	cfg, dir := daemontest.WriteConfig(t, "")
	return Options{
		ConfigFile: cfg, StateDir: filepath.Join(dir, "state"),
		Socket: filepath.Join(dir, "api.sock"), Seqpacket: filepath.Join(dir, "argv.sock"),
		Manager: func(context.Context) (*manager.Conn, error) { return systemdtest.Dial(t), nil },
	}
}

// Run refuses, before it serves or opens the manager, each setting it
// cannot use, and says which one (unitrun daemon maps it to its flag); a
// bad config or socket path is refused before the state dir is created.
func TestRunSetupErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		option string
		set    func(*Options)
	}{
		{"ConfigFile", func(o *Options) { o.ConfigFile = filepath.Join(file, "none.toml") }},
		{"StateDir", func(o *Options) { o.StateDir = filepath.Join(file, "state") }},
		{"Socket", func(o *Options) { o.Socket = filepath.Join(file, "api.sock") }},
		{"Seqpacket", func(o *Options) { o.Seqpacket = filepath.Join(file, "argv.sock") }},
	}
	for _, tt := range tests {
		t.Run(tt.option, func(t *testing.T) {
			o := runOptions(t)
			o.Manager = func(context.Context) (*manager.Conn, error) {
				t.Error("Run opened the manager after a setup error")
				return nil, errors.New("not to be opened")
			}
			tt.set(&o)
			var se *SetupError
			if err := Run(context.Background(), o); !errors.As(err, &se) || se.Option != tt.option {
				t.Errorf("Run: %v; want a *SetupError of %s", err, tt.option)
			}
			if _, err := os.Stat(o.StateDir); tt.option != "StateDir" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Run refused %s after it created the state dir %s (%v)", tt.option, o.StateDir, err)
			}
		})
	}
}

// Run refuses a state dir that another uid (65534) could write, or whose
// parent it could rename, before it takes the lock it keeps there or
// creates anything: the directory is left as it was (no "lock" file, no
// state dir created under a foreign parent), and the refusal names the
// owner even when "lock" is a symlink that loops.
func TestRunRefusesUntrustedStateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another uid needs root")
	}
	chown := func(t *testing.T, path string) {
		if err := os.Lchown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, parent, state string) (named string)
	}{
		{"state dir owned by another uid", func(t *testing.T, _, state string) string {
			os.Mkdir(state, 0o700)
			chown(t, state)
			return state + ": a directory owned by uid 65534"
		}},
		{"lock a looping symlink in a state dir owned by another uid", func(t *testing.T, _, state string) string {
			os.Mkdir(state, 0o700)
			lock := filepath.Join(state, "lock")
			os.Symlink(lock, lock)
			chown(t, lock)
			chown(t, state)
			return state + ": a directory owned by uid 65534"
		}},
		{"missing state dir under a parent owned by another uid", func(t *testing.T, parent, state string) string {
			chown(t, parent)
			return state + ": reached through " + parent + ", a directory owned by uid 65534"
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := runOptions(t)
			o.Manager = func(context.Context) (*manager.Conn, error) {
				t.Error("Run opened the manager after a setup error")
				return nil, errors.New("not to be opened")
			}
			parent := filepath.Join(t.TempDir(), "parent")
			os.Mkdir(parent, 0o700)
			o.StateDir = filepath.Join(parent, "state")
			want := tt.plant(t, parent, o.StateDir)
			before := tree(t, parent)
			err := Run(context.Background(), o)
			if se, ok := errors.AsType[*SetupError](err); !ok || se.Option != "StateDir" || !strings.Contains(err.Error(), want) {
				t.Errorf("Run: %v; want a *SetupError of StateDir naming %q", err, want)
			}
			if after := tree(t, parent); !slices.Equal(after, before) {
				t.Errorf("Run changed %s: %q before, %q after", parent, before, after)
			}
		})
	}
}

// Run refuses a state dir whose output directory others may write before
// it writes anything there: no "lock", no "store-version", and the
// listing and mtimes of the state dir are as they were.
func TestRunRefusesOpenOutputDir(t *testing.T) {
	o := runOptions(t)
	o.Manager = func(context.Context) (*manager.Conn, error) {
		t.Error("Run opened the manager after a setup error")
		return nil, errors.New("not to be opened")
	}
	out := filepath.Join(o.StateDir, "output")
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, dir := range []string{out, o.StateDir} {
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
	}
	before := tree(t, o.StateDir)
	err := Run(context.Background(), o)
	want := out + " is writable by group or others (mode 0777)"
	if se, ok := errors.AsType[*SetupError](err); !ok || se.Option != "StateDir" || !strings.Contains(err.Error(), want) {
		t.Errorf("Run: %v; want a *SetupError of StateDir naming %q", err, want)
	}
	if after := tree(t, o.StateDir); !slices.Equal(after, before) {
		t.Errorf("Run changed %s: %q before, %q after", o.StateDir, before, after)
	}
}

// tree lists the paths under dir with their owners and mtimes.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		paths = append(paths, fmt.Sprintf("%s %v uid %d mtime %v", path, fi.Mode(), st.Uid, fi.ModTime()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// Run serves until its context ends, then returns nil and leaves no
// socket served.
func TestRunServesUntilCanceled(t *testing.T) {
	o := runOptions(t)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, o) }()
	hc := serving(t, o, ran)
	cancel()
	if err := <-ran; err != nil {
		t.Errorf("Run after its context ended: %v; want nil", err)
	}
	if resp, err := hc.Get("http://unitrun/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("/healthz still served after Run returned: %s", resp.Status)
	}
}

// Run closes its store when its context ends (SIGTERM): the record of a
// job that ended just before is in the records log, which the next
// daemon opens with no damage to repair, and Run left no file of the
// store open.
func TestRunClosesStore(t *testing.T) {
	o := runOptions(t)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, o) }()
	serving(t, o, ran)
	c := client.New(o.Socket)
	id, err := c.Call(ctx, "echo", []string{"last"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Wait(ctx, id); err != nil || r.State != api.StateSucceeded {
		t.Fatalf("job %s: %+v, %v; want it succeeded", id, r, err)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run after its context ended: %v; want nil", err)
	}
	log := filepath.Join(o.StateDir, "records.log")
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == log {
			t.Errorf("Run returned with %s open (fd %s)", log, fd.Name())
		}
	}
	s, err := store.Open(o.StateDir)
	if err != nil {
		t.Fatalf("the next daemon's store: %v; want it opened without a repair", err)
	}
	defer s.Close()
	if r, err := s.Get(id); err != nil || r.State != string(api.StateSucceeded) {
		t.Errorf("job %s after Run returned: %+v, %v; want its record, succeeded", id, r, err)
	}
}

// serving returns an HTTP client of o.Socket once Run, whose end ran
// receives, serves /healthz there.
func serving(t *testing.T, o Options, ran <-chan error) *http.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", o.Socket)
		}}}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := hc.Get("http://unitrun/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-ran:
			t.Fatalf("Run ended before it served: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run does not serve /healthz: %v", err)
		}
	}
	return hc
}

// A socket path given for one front end leaves the other off (no default
// socket bound behind the user's back), and a path whose directory is
// missing is refused without creating it.
func TestListenBindsOnlyGivenPaths(t *testing.T) {
	dir := t.TempDir()
	api, argv, err := Listen(filepath.Join(dir, "api.sock"), "")
	if err != nil {
		t.Fatal(err)
	}
	api.Close()
	if argv != nil {
		argv.Close()
		t.Errorf("Listen with only a socket path bound a SEQPACKET socket at %s", argv.Addr())
	}
	api, argv, err = Listen("", filepath.Join(dir, "argv.sock"))
	if err != nil {
		t.Fatal(err)
	}
	argv.Close()
	if api != nil {
		api.Close()
		t.Errorf("Listen with only a seqpacket path bound an HTTP socket at %s", api.Addr())
	}
	missing := filepath.Join(dir, "none")
	var de *PathError
	if _, _, err := Listen(filepath.Join(missing, "api.sock"), ""); !errors.As(err, &de) || de.Dir != missing || !de.Missing {
		t.Errorf("Listen in a missing directory: %v, want a *PathError naming %s", err, missing)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Listen created the missing directory %s (%v)", missing, err)
	}
}
