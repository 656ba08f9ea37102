package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Config is the daemon's operations config: the operations callers may run
// and the daemon's limits.
type Config struct {
	Ops    []Op
	Limits Limits
}

// Limits bound the daemon's resources. Each has a default (DefaultLimits)
// and can be overridden in the [limits] table of daemon.toml.
type Limits struct {
	// MaxRequestBytes is the largest request accepted, a SEQPACKET packet
	// or an HTTP body (TOML key max_request_bytes, 256 to 16777216).
	MaxRequestBytes int
	// MaxLiveJobs is the number of jobs queued or running at once across
	// all ops (max_live_jobs, 1 to 65536).
	MaxLiveJobs int
	// MaxLiveJobsPerUID bounds the jobs queued or running at once that one
	// caller uid started, so that one caller cannot take every one of
	// max_live_jobs (max_live_jobs_per_uid, 0 to 65536; 0, the default,
	// sets no bound but max_live_jobs).
	MaxLiveJobsPerUID int
	// MaxConnectionsPerUID bounds the connections one caller uid holds
	// open at once on the HTTP and SEQPACKET sockets together; one more is
	// answered with CodeBusy and closed (max_connections_per_uid, 0 to
	// 65536; 0 sets no bound).
	MaxConnectionsPerUID int
	// MaxSubscriptionsPerUID bounds the jobs whose D-Bus Finished signal
	// the connections of one caller uid await at once, those they called
	// included; one more Subscribe is refused with CodeBusy (a Call is
	// not) (max_subscriptions_per_uid, 1 to 65536).
	MaxSubscriptionsPerUID int
	// MaxQueue is the number of calls an exclusive op holds waiting behind
	// its running job (max_queue, 0 to 65536; 0 refuses every call that
	// cannot join).
	MaxQueue int
	// OutputTailBytes is the size of the output tail kept in a job record
	// (output_tail_bytes, 0 to 16777216).
	OutputTailBytes int
	// RecordsKeep is the number of finished job records kept
	// (records_keep, 1 to 1000000).
	RecordsKeep int
	// RecordsMaxAge is how long a finished job record is kept
	// (records_max_age, a duration string, at least "1m").
	RecordsMaxAge time.Duration
	// ReadHeaderTimeout bounds how long an HTTP connection may take to send
	// a request's headers, and a SEQPACKET connection its request packet; a
	// slower one is answered with an error and closed (read_header_timeout,
	// a duration string, 100ms to 10m).
	ReadHeaderTimeout time.Duration
	// IdleTimeout is how long an HTTP connection may stay open between
	// requests before it is closed (idle_timeout, a duration string, 1s to
	// 24h).
	IdleTimeout time.Duration
	// WriteTimeout bounds how long a write of a streamed response (a job's
	// output log) may wait for a caller that reads nothing; the connection
	// is then closed (write_timeout, a duration string, 100ms to 1h).
	WriteTimeout time.Duration
}

// DefaultLimits returns the limits used for keys absent from [limits].
func DefaultLimits() Limits {
	return Limits{
		MaxRequestBytes:        64 << 10,
		MaxLiveJobs:            64,
		MaxConnectionsPerUID:   1024,
		MaxSubscriptionsPerUID: 1024,
		MaxQueue:               16,
		OutputTailBytes:        64 << 10,
		RecordsKeep:            1000,
		RecordsMaxAge:          30 * 24 * time.Hour,

		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		WriteTimeout:      time.Minute,
	}
}

// Op is one operation callers may run.
type Op struct {
	// Name names the op in requests: 1 to 63 of [a-z0-9_-], starting with
	// a letter or digit.
	Name string
	// Exec is the argv template of an op run as a transient unit; Exec[0]
	// is an absolute path. Exactly one of Exec and Unit is set.
	Exec []string
	// Unit is an existing .service unit to start instead.
	Unit string
	// RequestFile, only with Unit, is the absolute path that receives the
	// caller's args, written atomically before the start.
	RequestFile string
	// RequestFormat is how RequestFile holds the args: "lines" (each arg
	// followed by a newline; the default) or "nul" (each followed by a NUL).
	// It is set exactly when RequestFile is.
	RequestFormat string
	// Args is the rule every call's args must satisfy.
	Args ArgsRule
	// AllowUIDs and AllowGIDs list who may call: a caller whose uid is in
	// AllowUIDs or one of whose gids is in AllowGIDs. An op with both empty
	// may be called by root (uid 0) only; once either is set, root is
	// allowed only if listed.
	AllowUIDs []uint32
	AllowGIDs []uint32
	// Timeout bounds a run of the op; 0 means no bound.
	Timeout time.Duration
	// Exclusive ops run one job at a time.
	Exclusive bool
	// OnBusy, set exactly when Exclusive, says what a call does while a job
	// of the op runs: "join-or-queue" (the default: a call with the same
	// args joins the running job, one with different args is queued) or
	// "join-or-refuse" (a call with different args is refused).
	OnBusy string
	// OnDisconnect says what happens to a job when its waiting caller goes
	// away: "continue" (the default) or "stop".
	OnDisconnect string
	// BindToCaller, only with Exec, binds the op's unit to the caller's own
	// unit or container scope so that the op stops with the caller.
	BindToCaller bool
	// Retry reruns a failed job.
	Retry RetryRule
	// Env is set in the op's environment; "{caller}" in a value is replaced
	// by the caller's identity (see Environ).
	Env map[string]string
	// EnvPassthrough names variables copied from the daemon's environment
	// when it has them.
	EnvPassthrough []string
	// RebootMarker is an absolute path the op creates when the host needs a
	// reboot; "" when the op never asks for one.
	RebootMarker string
	// Prefix, set exactly when Exec is, starts the names of the op's
	// transient units; it defaults to "unitrun-op-<name>-" and must pass
	// unit.ValidatePrefix.
	Prefix string
}

// ArgsRule is the rule for a call's args.
type ArgsRule struct {
	// Min and Max bound the number of args; 0 <= Min <= Max.
	Min, Max int
	// Pattern, when set, must match each arg. It is used as written, so
	// anchor it (^...$) to constrain the whole arg.
	Pattern *regexp.Regexp
}

// RetryRule reruns a failed job, each time as a fresh unit, with the
// semantics of the job package's retry policy.
type RetryRule struct {
	// Attempts is the total number of runs, 1 to 100; 1 means no retry.
	Attempts int
	// Delay is the wait before the second run; each later wait doubles, up
	// to MaxDelay when MaxDelay is positive. Both are 0 when Attempts is 1.
	Delay    time.Duration
	MaxDelay time.Duration
}

// Load reads the operations config: file (daemon.toml, which must
// exist) and then, when opsDir is not "", every file named *.toml in opsDir,
// in byte order of their names; other names are skipped. A missing opsDir holds no ops. Only
// daemon.toml may hold a [limits] table; every file may hold [[op]] tables.
//
// Each file, and opsDir, must be owned by root or the daemon's uid and not
// be writable by group or others, and so must each directory on the way
// to them (a directory of root's with the sticky bit, as /tmp, may be
// writable by others); a symlink on the way must be owned by root or the
// daemon's uid; a file must be a regular file named *.toml, after
// symlinks. Each file is opened once and judged as opened.
//
// Unknown keys, values of the wrong type and broken rules are errors. Each
// is an *Error naming the file, the line and the rule; when there are
// several, Load returns them joined (errors.Join), in file and line
// order. An op defined twice, in one file or two, is an error naming both
// places.
func Load(file, opsDir string) (*Config, error) {
	files := []string{file}
	if opsDir != "" {
		dropIns, err := listDropIns(opsDir)
		if err != nil {
			return nil, err
		}
		files = append(files, dropIns...)
	}
	cfg := &Config{Limits: DefaultLimits()}
	var errs []*Error
	defined := make(map[string]string) // op name -> "file:line"
	for i, f := range files {
		ops, limits, fileErrs := loadFile(f, i == 0)
		errs = append(errs, fileErrs...)
		if limits != nil {
			cfg.Limits = *limits
		}
		for _, lo := range ops {
			if prev, ok := defined[lo.op.Name]; ok && lo.op.Name != "" {
				errs = append(errs, lo.err("", "already defined at "+prev))
				continue
			}
			defined[lo.op.Name] = lo.where()
			cfg.Ops = append(cfg.Ops, lo.op)
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return cfg, nil
}

// listDropIns returns the *.toml files of dir sorted by name.
func listDropIns(dir string) ([]string, error) {
	real, err := resolveConfigPath(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, configReadError(dir, err)
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		return nil, fmt.Errorf("ops dir: %w", err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".toml") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	return files, nil
}

// Validate checks the rules Load enforces on a Config whose defaults
// are applied, such as one built in code. Its errors are *Errors
// without file or line.
func (c *Config) Validate() error {
	var errs []*Error
	for _, fe := range checkLimits(&c.Limits) {
		errs = append(errs, &Error{Key: fe.key, Rule: fe.rule})
	}
	seen := make(map[string]bool)
	for i := range c.Ops {
		op := &c.Ops[i]
		for _, fe := range checkOp(op) {
			errs = append(errs, &Error{Op: op.Name, Key: fe.key, Rule: fe.rule})
		}
		if seen[op.Name] {
			errs = append(errs, &Error{Op: op.Name, Rule: "defined twice"})
		}
		seen[op.Name] = true
	}
	if len(errs) > 0 {
		return joinErrors(errs)
	}
	return nil
}
