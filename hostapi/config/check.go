package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/unitrun/unitrun/internal/lazyregexp"
	"github.com/unitrun/unitrun/unit"
)

const (
	maxAttempts      = 100
	minRecordsMaxAge = time.Minute
)

var (
	opNameRE  = lazyregexp.New(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	envNameRE = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// checkOp returns the rules op breaks; keys are relative to the op.
func checkOp(op *Op) []fieldError {
	var errs []fieldError
	fail := func(key, format string, a ...any) {
		errs = append(errs, fieldError{key, fmt.Sprintf(format, a...)})
	}
	switch {
	case op.Name == "":
		fail("name", "name is required")
	case !opNameRE.MatchString(op.Name):
		fail("name", "name %q must match %s", op.Name, opNameRE)
	}
	isExec, isUnit := op.Exec != nil, op.Unit != ""
	switch {
	case isExec && isUnit:
		fail("", "exactly one of exec and unit must be set, not both")
	case !isExec && !isUnit:
		fail("", "exactly one of exec and unit must be set")
	}
	if isExec {
		checkExec(op.Exec, fail)
	}
	if isUnit {
		checkOpUnit(op.Unit, fail)
	}
	if op.RequestFile != "" {
		if !isUnit {
			fail("request_file", "request_file needs unit (an exec op gets its args as argv)")
		}
		checkPath("request_file", op.RequestFile, fail)
		if strings.HasSuffix(op.RequestFile, ".toml") {
			fail("request_file", "request_file %q must not be named *.toml: callers' args are written to it, and the daemon reads its config from *.toml files", op.RequestFile)
		}
	}
	switch {
	case op.RequestFile == "" && op.RequestFormat != "":
		fail("request_format", "request_format needs request_file")
	case op.RequestFile != "" && op.RequestFormat != "lines" && op.RequestFormat != "nul":
		fail("request_format", `request_format %q must be "lines" or "nul"`, op.RequestFormat)
	}
	checkArgsRule(&op.Args, fail)
	checkIDs("allow_uids", op.AllowUIDs, fail)
	checkIDs("allow_gids", op.AllowGIDs, fail)
	if op.Timeout < 0 {
		fail("timeout", "timeout must not be negative")
	}
	switch known := op.OnBusy == "join-or-queue" || op.OnBusy == "join-or-refuse"; {
	case !op.Exclusive && op.OnBusy != "" && !known:
		fail("on_busy", `on_busy %q must be "join-or-queue" or "join-or-refuse", and needs exclusive = true`, op.OnBusy)
	case !op.Exclusive && op.OnBusy != "":
		fail("on_busy", "on_busy needs exclusive = true")
	case op.Exclusive && !known:
		fail("on_busy", `on_busy %q must be "join-or-queue" or "join-or-refuse"`, op.OnBusy)
	}
	if op.OnDisconnect != "continue" && op.OnDisconnect != "stop" {
		fail("on_disconnect", `on_disconnect %q must be "continue" or "stop"`, op.OnDisconnect)
	}
	if op.BindToCaller && isUnit {
		fail("bind_to_caller", "bind_to_caller needs exec (the dependencies of an existing unit are its own)")
	}
	checkRetry(&op.Retry, fail)
	checkEnv(op.Env, op.EnvPassthrough, fail)
	if op.RebootMarker != "" {
		checkPath("reboot_marker", op.RebootMarker, fail)
	}
	switch {
	case isExec && isUnit:
	case isUnit && op.Prefix != "":
		fail("prefix", "prefix needs exec (only transient units are named by unitrun)")
	case isExec && op.Prefix == "":
		// An op loaded without a valid name has no default prefix; its
		// name is reported instead.
		if opNameRE.MatchString(op.Name) {
			fail("prefix", "prefix must not be empty")
		}
	case isExec:
		if err := unit.ValidatePrefix(op.Prefix); err != nil {
			fail("prefix", "prefix: %v", err)
		}
	}
	return errs
}

func checkExec(exec []string, fail func(key, format string, a ...any)) {
	if len(exec) == 0 {
		fail("exec", "exec must not be empty")
		return
	}
	for i, w := range exec {
		if strings.IndexByte(w, 0) >= 0 {
			fail("exec", "exec[%d] must not contain NUL", i)
		}
	}
	if !filepath.IsAbs(exec[0]) {
		fail("exec", "exec[0] must be an absolute path")
	}
	if n := slices.Index(exec, argsWord); n >= 0 && slices.Index(exec[n+1:], argsWord) >= 0 {
		fail("exec", "exec may hold the word %s at most once", argsWord)
	}
}

func checkOpUnit(name string, fail func(key, format string, a ...any)) {
	if err := unit.Validate(name); err != nil {
		fail("unit", "%v", err)
		return
	}
	if !strings.HasSuffix(name, ".service") {
		fail("unit", "unit %q must be a .service unit", name)
		return
	}
	if strings.HasSuffix(name, "@.service") {
		fail("unit", "unit %q is a template: name an instance, such as %q", name, strings.TrimSuffix(name, ".service")+"NAME.service")
	}
}

func checkArgsRule(a *ArgsRule, fail func(key, format string, a ...any)) {
	switch {
	case a.Min < 0:
		fail("args.min", "args.min must be at least 0")
	case a.Max < a.Min:
		fail("args.max", "args.max (%d) must be at least args.min (%d)", a.Max, a.Min)
	case a.Pattern != nil && a.Max == 0:
		fail("args.pattern", "args.pattern needs args.max of at least 1")
	}
}

func checkIDs(key string, ids []uint32, fail func(key, format string, a ...any)) {
	for i, id := range ids {
		if id == 1<<32-1 {
			fail(key, "%s[%d] = %d: must be between 0 and %d", key, i, id, uint32(1<<32-2))
		}
	}
}

func checkRetry(r *RetryRule, fail func(key, format string, a ...any)) {
	switch {
	case r.Attempts < 1 || r.Attempts > maxAttempts:
		fail("retry.attempts", "retry.attempts must be between 1 and %d", maxAttempts)
	case r.Attempts == 1 && (r.Delay != 0 || r.MaxDelay != 0):
		fail("retry.delay", "retry.delay and retry.max_delay need retry.attempts of at least 2")
	}
	switch {
	case r.Delay < 0:
		fail("retry.delay", "retry.delay must not be negative")
	case r.MaxDelay < 0:
		fail("retry.max_delay", "retry.max_delay must not be negative")
	case r.MaxDelay > 0 && r.MaxDelay < r.Delay:
		fail("retry.max_delay", "retry.max_delay (%s) must be at least retry.delay (%s)", r.MaxDelay, r.Delay)
	}
}

func checkEnv(env map[string]string, pass []string, fail func(key, format string, a ...any)) {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !envNameRE.MatchString(k) {
			fail("env."+k, "env key %q must be a POSIX name (%s)", k, envNameRE)
		}
		if strings.ContainsAny(env[k], "\x00\n") {
			fail("env."+k, "env.%s must not contain NUL or a newline", k)
		}
	}
	seen := make(map[string]bool)
	for i, name := range pass {
		switch {
		case !envNameRE.MatchString(name):
			fail("env_passthrough", "env_passthrough[%d] %q must be a POSIX name (%s)", i, name, envNameRE)
		case seen[name]:
			fail("env_passthrough", "env_passthrough names %q twice", name)
		default:
			if _, ok := env[name]; ok {
				fail("env_passthrough", "env_passthrough[%d] %q is also set in env", i, name)
			}
		}
		seen[name] = true
	}
}

// checkPath requires an absolute path in canonical form, without NUL.
func checkPath(key, p string, fail func(key, format string, a ...any)) {
	if strings.IndexByte(p, 0) >= 0 || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		fail(key, "%s %q must be an absolute path in clean form", key, p)
	}
}

// checkLimits returns the limits out of range; keys are "limits.<key>".
func checkLimits(l *Limits) []fieldError {
	var errs []fieldError
	inRange := func(key string, v, lo, hi int) {
		if v < lo || v > hi {
			errs = append(errs, fieldError{"limits." + key, fmt.Sprintf("limits.%s must be between %d and %d", key, lo, hi)})
		}
	}
	inRange("max_request_bytes", l.MaxRequestBytes, 256, 16<<20)
	inRange("max_live_jobs", l.MaxLiveJobs, 1, 65536)
	inRange("max_live_jobs_per_uid", l.MaxLiveJobsPerUID, 0, 65536)
	inRange("max_connections_per_uid", l.MaxConnectionsPerUID, 0, 65536)
	inRange("max_subscriptions_per_uid", l.MaxSubscriptionsPerUID, 1, 65536)
	inRange("max_queue", l.MaxQueue, 0, 65536)
	inRange("output_tail_bytes", l.OutputTailBytes, 0, 16<<20)
	inRange("records_keep", l.RecordsKeep, 1, 1000000)
	if l.RecordsMaxAge < minRecordsMaxAge {
		errs = append(errs, fieldError{"limits.records_max_age", fmt.Sprintf("limits.records_max_age must be at least %s", minRecordsMaxAge)})
	}
	between := func(key string, v, lo, hi time.Duration) {
		if v < lo || v > hi {
			errs = append(errs, fieldError{"limits." + key, fmt.Sprintf("limits.%s must be between %s and %s", key, lo, hi)})
		}
	}
	between("read_header_timeout", l.ReadHeaderTimeout, 100*time.Millisecond, 10*time.Minute)
	between("idle_timeout", l.IdleTimeout, time.Second, 24*time.Hour)
	between("write_timeout", l.WriteTimeout, 100*time.Millisecond, time.Hour)
	return errs
}
