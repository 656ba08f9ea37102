// Package manager reaches a systemd manager over D-Bus: the system manager,
// the calling user's manager, any manager's private socket, or an embedded
// user manager that unitrun boots itself (with package boot) where no
// systemd is running. On a private socket godbus reads and writes through
// busframe's stream, which drops the signals no Watch waits for.
package manager

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Kind names a way to reach a manager.
type Kind string

// The kinds a spec can name.
const (
	KindAuto     Kind = "auto"     // system, else user, else embedded
	KindSystem   Kind = "system"   // the system manager (PID 1)
	KindUser     Kind = "user"     // the calling user's manager
	KindPrivate  Kind = "private"  // a manager's private socket, peer to peer
	KindEmbedded Kind = "embedded" // a user manager unitrun boots and reuses
)

// DefaultEmbeddedDir is the runtime directory of the embedded manager.
const DefaultEmbeddedDir = "/run/unitrun/manager"

// EnvManager and EnvEmbeddedDir are the environment variables that choose the
// manager when no flag does.
const (
	EnvManager     = "UNITRUN_MANAGER"
	EnvEmbeddedDir = "UNITRUN_EMBEDDED_DIR"
)

// Spec is a parsed manager choice: "auto", "system", "user",
// "private:PATH" or "embedded".
type Spec struct {
	Kind Kind
	Path string // socket path, for KindPrivate
}

// ParseSpec parses a manager choice. The empty string means auto.
func ParseSpec(s string) (Spec, error) {
	switch s {
	case "", string(KindAuto):
		return Spec{Kind: KindAuto}, nil
	case string(KindSystem), string(KindUser), string(KindEmbedded):
		return Spec{Kind: Kind(s)}, nil
	}
	if p, ok := strings.CutPrefix(s, "private:"); ok {
		if !filepath.IsAbs(p) {
			return Spec{}, fmt.Errorf("manager %q: private socket path must be absolute", s)
		}
		return Spec{Kind: KindPrivate, Path: filepath.Clean(p)}, nil
	}
	return Spec{}, fmt.Errorf("manager %q: must be auto, system, user, private:PATH or embedded", s)
}

// ParseChoice parses the manager a command line chooses: flag, the value
// of its --manager, or, when that is "", $UNITRUN_MANAGER. Its error names
// the one it read.
func ParseChoice(flag string) (Spec, error) {
	s, from := flag, "--manager"
	if s == "" {
		s, from = os.Getenv(EnvManager), "$"+EnvManager
	}
	spec, err := ParseSpec(s)
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", from, err)
	}
	return spec, nil
}

func (s Spec) String() string {
	if s.Kind == KindPrivate {
		return "private:" + s.Path
	}
	return string(s.Kind)
}

// Target is a resolved manager: where to dial and how.
type Target struct {
	Spec    string // what was chosen: system, user, private:PATH or embedded
	Address string // D-Bus address
	Peer    bool   // a private socket: no bus daemon, no Hello
	// Env holds the environment that points systemctl and systemd-run at
	// this manager (empty for the system manager).
	Env []string
	// Journal is where the manager's units log.
	Journal Journal
}

// Journal says where the units of a manager log: the host's journal, or
// the embedded manager's own.
type Journal struct {
	// Dir is the directory of the journal files, for journalctl
	// --directory; empty for the host's journal.
	Dir string
	// Sockets is journald's runtime directory, where its sockets are;
	// empty for the host's (/run/systemd/journal).
	Sockets string
}

// Options tune Open and Resolve.
type Options struct {
	// EmbeddedDir is the embedded manager's runtime directory, an
	// absolute path, as unitrun's --embedded-dir gives it; empty means
	// $UNITRUN_EMBEDDED_DIR, else DefaultEmbeddedDir.
	EmbeddedDir string
	// OverBus reaches a user manager (the embedded one too) found on a
	// private socket through its session bus, where it is on it: one
	// connection then carries the calls, the signals and the units kept
	// for the caller (AddRef=yes, which a private socket cannot carry:
	// Conn.CanRef), as systemd-run --wait does; should the bus go down,
	// the connection redials on the manager's socket, and stays there. A
	// manager that is not on its bus, and the system manager, are reached
	// on their sockets, and so is a manager named by its socket
	// (private:PATH), as asked: its signals then outlive the bus going
	// down.
	OverBus bool
}

// Embedded returns the embedded manager these options name.
func (o Options) Embedded() *Embedded {
	dir, _ := o.embeddedDir()
	return &Embedded{Dir: dir}
}

// Check returns an error unless the embedded manager's directory that o
// names is an absolute path: the embedded manager mounts and binds it,
// so a relative one would be taken from wherever a process of it runs.
// The error names where the path came from: `--embedded-dir "m": must be
// an absolute path`, or $UNITRUN_EMBEDDED_DIR.
func (o Options) Check() error {
	if dir, from := o.embeddedDir(); !filepath.IsAbs(dir) {
		return fmt.Errorf("%s %q: must be an absolute path", from, dir)
	}
	return nil
}

// embeddedDir is the embedded manager's directory that o names and what
// named it: o.EmbeddedDir (--embedded-dir), $UNITRUN_EMBEDDED_DIR or
// neither (DefaultEmbeddedDir).
func (o Options) embeddedDir() (dir, from string) {
	if o.EmbeddedDir != "" {
		return o.EmbeddedDir, "--embedded-dir"
	}
	if dir := os.Getenv(EnvEmbeddedDir); dir != "" {
		return dir, "$" + EnvEmbeddedDir
	}
	return DefaultEmbeddedDir, ""
}

// Attempt records one candidate tried while resolving a spec.
type Attempt struct {
	Target Target
	Err    error // nil if it was reached; of a failed dial, the system's reason alone
	Why    string
}

// Open reaches the manager that spec names (see ParseSpec; "" is auto) and
// returns a connection to it. For auto it tries, in order: the system manager
// when systemd is PID 1, the calling user's manager, and the embedded
// manager, booting the embedded one if it is not running. The error of a
// failed open names every candidate tried. Options that fail their
// Check are refused before anything is tried.
func Open(ctx context.Context, spec string, o Options) (*Conn, error) {
	c, _, err := open(ctx, spec, o, true)
	return c, err
}

// Probe is Open that reports every candidate it tried and why it chose the
// one it did. With boot false it does not boot the embedded manager.
func Probe(ctx context.Context, spec string, o Options, boot bool) (*Conn, []Attempt, error) {
	return open(ctx, spec, o, boot)
}

// open is Open and Probe: it parses spec and tries the manager it names,
// or, for auto, each candidate in turn.
func open(ctx context.Context, spec string, o Options, boot bool) (*Conn, []Attempt, error) {
	if spec == "" {
		spec = os.Getenv(EnvManager)
	}
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, nil, err
	}
	if err := o.Check(); err != nil {
		return nil, nil, err
	}
	p := &prober{ctx: ctx, overBus: o.OverBus && s.Kind != KindPrivate}
	var c *Conn
	if s.Kind == KindAuto {
		c = p.auto(o, boot)
	} else if c, err = p.asked(s, o, boot); err != nil {
		return nil, nil, err
	}
	if c == nil {
		return nil, p.tries, p.fail(s)
	}
	return c, p.tries, nil
}

// A prober dials the candidates of one open and keeps each attempt.
type prober struct {
	ctx     context.Context
	overBus bool // Options.OverBus
	tries   []Attempt
}

// try dials t, tried for why, and returns the connection, or nil when t
// cannot be reached. With overBus it dials the bus the manager of t is on
// first, and t if the manager does not answer there.
func (p *prober) try(t Target, why string) *Conn {
	if bt, ok := t.overBus(); ok && p.overBus {
		if c, err := dial(p.ctx, bt, t); err == nil {
			p.tries = append(p.tries, Attempt{Target: bt, Why: why + ", on its bus"})
			return c
		}
	}
	c, err := Dial(p.ctx, t)
	p.tries = append(p.tries, Attempt{Target: t, Err: dialReason(err), Why: why})
	return c
}

// asked tries the manager that s, not auto, names, booting the embedded
// one first with boot. Its error is one that comes before any dial.
func (p *prober) asked(s Spec, o Options, boot bool) (*Conn, error) {
	var t Target
	switch s.Kind {
	case KindSystem:
		t = systemTarget()
	case KindUser:
		ut, err := userTarget()
		if err != nil {
			return nil, fmt.Errorf("manager user: %w", err)
		}
		t = ut
	case KindPrivate:
		t = privateTarget(s.Path)
	case KindEmbedded:
		e := o.Embedded()
		if boot {
			if _, err := e.Ensure(p.ctx); err != nil {
				return nil, err
			}
		}
		return p.tryEmbedded(e, boot, "asked for"), nil
	default:
		return nil, nil
	}
	return p.try(t, "asked for"), nil
}

// auto tries, in this order, the system manager when systemd is PID 1,
// the calling user's manager, and the embedded one (booted first with
// boot), and returns the first reached, or nil.
func (p *prober) auto(o Options, boot bool) *Conn {
	if pid1IsSystemd() {
		if c := p.try(systemTarget(), "systemd is PID 1"); c != nil {
			return c
		}
	} else {
		p.tries = append(p.tries, Attempt{Target: systemTarget(), Err: errors.New("systemd is not PID 1"), Why: "skipped"})
	}
	if t, err := userTarget(); err == nil {
		if c := p.try(t, "the calling user's manager is running"); c != nil {
			return c
		}
	} else {
		p.tries = append(p.tries, Attempt{Target: Target{Spec: string(KindUser)}, Err: err, Why: "skipped"})
	}
	e := o.Embedded()
	if boot {
		if _, err := e.Ensure(p.ctx); err != nil {
			p.tries = append(p.tries, Attempt{Target: e.Target(), Err: err})
			return nil
		}
	}
	return p.tryEmbedded(e, boot, "no system or user manager is reachable")
}

// ErrNotBooted is the Attempt error of an embedded manager that Probe,
// not booting it, finds not running: it boots on first use.
var ErrNotBooted = errors.New("not booted; it boots on first use, or with \"unitrun manager start\"")

// tryEmbedded tries the embedded manager e, tried for why. Without boot
// (which has booted it) it records ErrNotBooted, without a dial, when e is
// not running.
func (p *prober) tryEmbedded(e *Embedded, boot bool, why string) *Conn {
	if !boot && !e.Running() {
		p.tries = append(p.tries, Attempt{Target: e.Target(), Err: ErrNotBooted, Why: why})
		return nil
	}
	return p.try(e.Target(), why)
}

// fail is the error of an open of s that reached no manager: every
// attempt and its reason, or the caller's own cancel (Ctrl-C while the
// embedded manager boots), which it is told of rather than that no
// manager is there.
func (p *prober) fail(s Spec) error {
	if err := p.ctx.Err(); err != nil {
		return fmt.Errorf("manager %s: %w", s, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "manager %s: no manager reachable", s)
	for _, a := range p.tries {
		if a.Target.Address == "" { // skipped before an address was known
			fmt.Fprintf(&b, "; %s: %v", a.Target.Spec, a.Err)
			continue
		}
		fmt.Fprintf(&b, "; %s (%s): %v", a.Target.Spec, a.Target.Address, a.Err)
	}
	return errors.New(b.String())
}

func pid1IsSystemd() bool {
	comm, err := os.ReadFile("/proc/1/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "systemd" {
		return false
	}
	_, err = os.Stat("/run/systemd/system")
	return err == nil
}

func systemTarget() Target {
	if os.Geteuid() == 0 && socketExists("/run/systemd/private") {
		return Target{Spec: string(KindSystem), Address: unixAddress("/run/systemd/private"), Peer: true}
	}
	addr := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
	if addr == "" {
		addr = unixAddress("/run/dbus/system_bus_socket")
	}
	return Target{Spec: string(KindSystem), Address: addr}
}

func userTarget() (Target, error) {
	rt := os.Getenv("XDG_RUNTIME_DIR")
	if rt != "" {
		if p := filepath.Join(rt, "systemd", "private"); socketExists(p) {
			return Target{Spec: string(KindUser), Address: unixAddress(p), Peer: true, Env: runtimeEnv(rt), Journal: runtimeJournal(rt)}, nil
		}
	}
	if addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); addr != "" {
		return Target{Spec: string(KindUser), Address: addr, Env: runtimeEnv(rt)}, nil
	}
	return Target{}, errors.New("neither $XDG_RUNTIME_DIR/systemd/private nor $DBUS_SESSION_BUS_ADDRESS is there")
}

func privateTarget(path string) Target {
	t := Target{Spec: "private:" + path, Address: unixAddress(path), Peer: true}
	// A user manager's private socket is <runtime dir>/systemd/private.
	if filepath.Base(path) == "private" && filepath.Base(filepath.Dir(path)) == "systemd" && path != "/run/systemd/private" {
		rt := filepath.Dir(filepath.Dir(path))
		t.Env = runtimeEnv(rt)
		t.Journal = runtimeJournal(rt)
	}
	return t
}

// runtimeJournal is where the units of the user manager whose runtime
// directory is rt log: the journal of its own that an embedded manager
// (booted in rt) runs beside it, else the host's (the zero Journal). It is
// the same whether that manager is reached as private:PATH or, after
// "eval $(unitrun manager env)", as the user manager.
func runtimeJournal(rt string) Journal {
	if e := (&Embedded{Dir: rt}); socketExists(filepath.Join(e.Target().Journal.Sockets, "stdout")) {
		return e.Target().Journal
	}
	return Journal{}
}

func runtimeEnv(rt string) []string {
	if rt == "" {
		return nil
	}
	return []string{"XDG_RUNTIME_DIR=" + rt, "DBUS_SESSION_BUS_ADDRESS=" + unixAddress(filepath.Join(rt, "bus"))}
}

func socketExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// unixAddress returns the D-Bus address of a unix socket path, escaping the
// path as the D-Bus specification requires.
func unixAddress(path string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.WriteString("unix:path=")
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_/.\\*", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// socketPath returns the path of a unix:path= address as unixAddress
// writes it, or false for any other address.
func socketPath(address string) (string, bool) {
	rest, ok := strings.CutPrefix(address, "unix:path=")
	if !ok || strings.ContainsAny(rest, ",;") {
		return "", false
	}
	path, err := url.PathUnescape(rest)
	return path, err == nil
}

// dialReason is err without the layers of a failed dial around the
// system's reason ("manager private:/x: dial unix:path=/x: dial unix /x:
// connect: no such file or directory" is "no such file or directory"),
// for a message that names the manager and its address already.
func dialReason(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}
