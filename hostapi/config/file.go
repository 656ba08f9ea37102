package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"time"

	toml "github.com/pelletier/go-toml/v2"
)

// fileConfig is the TOML schema of daemon.toml, fileDropIn that of a file
// in ops.d: the toml tag of a field is its key, and its `example` tag, for
// a duration or a table, an example that errors show. Fields whose absence
// differs from their zero value are pointers; integers are int64 so that
// range checks see the value written.
type fileConfig struct {
	Op     []fileOp    `toml:"op"`
	Limits *fileLimits `toml:"limits"`
}

type fileDropIn struct {
	Op []fileOp `toml:"op"`
}

type fileOp struct {
	Name           string            `toml:"name"`
	Exec           []string          `toml:"exec"`
	Unit           string            `toml:"unit"`
	RequestFile    string            `toml:"request_file"`
	RequestFormat  *string           `toml:"request_format"`
	Args           *fileArgs         `toml:"args" example:"{ min = 0, max = 1, pattern = \"^[a-z]+$\" }"`
	AllowUIDs      []int64           `toml:"allow_uids"`
	AllowGIDs      []int64           `toml:"allow_gids"`
	Timeout        *duration         `toml:"timeout" example:"30m"`
	Exclusive      bool              `toml:"exclusive"`
	OnBusy         *string           `toml:"on_busy"`
	OnDisconnect   *string           `toml:"on_disconnect"`
	BindToCaller   bool              `toml:"bind_to_caller"`
	Retry          *fileRetry        `toml:"retry" example:"{ attempts = 5, delay = \"10s\", max_delay = \"5m\" }"`
	Env            map[string]string `toml:"env"`
	EnvPassthrough []string          `toml:"env_passthrough"`
	RebootMarker   string            `toml:"reboot_marker"`
	Prefix         *string           `toml:"prefix"`
}

type fileArgs struct {
	Min     int64   `toml:"min"`
	Max     int64   `toml:"max"`
	Pattern *string `toml:"pattern"`
}

type fileRetry struct {
	Attempts *int64    `toml:"attempts"`
	Delay    *duration `toml:"delay" example:"10s"`
	MaxDelay *duration `toml:"max_delay" example:"5m"`
}

type fileLimits struct {
	MaxRequestBytes        *int64    `toml:"max_request_bytes"`
	MaxLiveJobs            *int64    `toml:"max_live_jobs"`
	MaxLiveJobsPerUID      *int64    `toml:"max_live_jobs_per_uid"`
	MaxConnectionsPerUID   *int64    `toml:"max_connections_per_uid"`
	MaxSubscriptionsPerUID *int64    `toml:"max_subscriptions_per_uid"`
	MaxQueue               *int64    `toml:"max_queue"`
	OutputTailBytes        *int64    `toml:"output_tail_bytes"`
	RecordsKeep            *int64    `toml:"records_keep"`
	RecordsMaxAge          *duration `toml:"records_max_age" example:"720h"`

	ReadHeaderTimeout *duration `toml:"read_header_timeout" example:"10s"`
	IdleTimeout       *duration `toml:"idle_timeout" example:"2m"`
	WriteTimeout      *duration `toml:"write_timeout" example:"1m"`
}

// A fieldError is a broken rule before it is placed in a file: key is the
// TOML key relative to the op (or "limits.<key>"), rule the message.
type fieldError struct {
	key, rule string
}

// loadedOp is an op as read from a file, with where its keys are.
type loadedOp struct {
	op    Op
	file  string
	at    keyPath // the op's path in the file: op[i]
	lines lines
}

func (lo *loadedOp) err(key, rule string) *Error {
	return &Error{File: lo.file, Line: lo.lines.line(lo.at, key), Op: lo.op.Name, Key: key, Rule: rule}
}

func (lo *loadedOp) where() string {
	return fmt.Sprintf("%s:%d", lo.file, lo.lines[lo.at])
}

// loadFile reads and checks one config file. isMain says whether it is
// daemon.toml, the only file that may hold [limits]; limits is nil when the
// file has none.
func loadFile(path string, isMain bool) (ops []loadedOp, limits *Limits, errs []*Error) {
	data, err := readConfigFile(path)
	if err != nil {
		return nil, nil, []*Error{configReadError(path, err)}
	}
	var tree map[string]any
	if err := toml.Unmarshal(data, &tree); err != nil {
		return nil, nil, syntaxErrors(path, err)
	}
	d := decoder{file: path, lines: scanLines(data)}
	var fc fileConfig
	var fd fileDropIn
	if isMain {
		d.decode(reflect.ValueOf(&fc).Elem(), tree, node{})
	} else {
		d.other = reflect.TypeFor[fileConfig]()
		d.decode(reflect.ValueOf(&fd).Elem(), tree, node{})
		fc.Op = fd.Op
	}
	// Every rule is checked, as well as the types: those that a value of
	// the wrong type, or an unknown key, may have broken are left out
	// (decoder.follows).
	errs = d.errs
	for i := range fc.Op {
		lo := loadedOp{file: path, at: keyPath("").key("op").index(i), lines: d.lines}
		var fes []fieldError
		lo.op, fes = buildOp(&fc.Op[i])
		fes = append(fes, checkOp(&lo.op)...)
		for _, fe := range fes {
			if !d.follows(lo.at, fe) {
				errs = append(errs, lo.err(fe.key, fe.rule))
			}
		}
		ops = append(ops, lo)
	}
	if fc.Limits != nil {
		l, fes := buildLimits(fc.Limits)
		fes = append(fes, checkLimits(&l)...)
		for _, fe := range fes {
			if !d.follows(keyPath("").key("limits"), fe) {
				errs = append(errs, &Error{File: path, Line: d.lines.line("", fe.key), Key: fe.key, Rule: fe.rule})
			}
		}
		limits = &l
	}
	return ops, limits, errs
}

// buildOp converts a decoded op to an Op with defaults applied, reporting
// values that cannot be converted. checkOp checks the rest.
func buildOp(fo *fileOp) (Op, []fieldError) {
	op := Op{
		Name:           fo.Name,
		Exec:           fo.Exec,
		Unit:           fo.Unit,
		RequestFile:    fo.RequestFile,
		Exclusive:      fo.Exclusive,
		OnDisconnect:   "continue",
		BindToCaller:   fo.BindToCaller,
		Retry:          RetryRule{Attempts: 1},
		Env:            fo.Env,
		EnvPassthrough: fo.EnvPassthrough,
		RebootMarker:   fo.RebootMarker,
	}
	var errs []fieldError
	fail := func(key, format string, a ...any) {
		errs = append(errs, fieldError{key, fmt.Sprintf(format, a...)})
	}
	switch {
	case fo.RequestFormat != nil:
		op.RequestFormat = *fo.RequestFormat
	case op.RequestFile != "":
		op.RequestFormat = "lines"
	}
	if a := fo.Args; a != nil {
		op.Args.Min = clampInt(a.Min)
		op.Args.Max = clampInt(a.Max)
		if a.Pattern != nil {
			re, err := regexp.Compile(*a.Pattern)
			switch {
			case *a.Pattern == "":
				fail("args.pattern", "args.pattern must not be empty")
			case err != nil:
				fail("args.pattern", "args.pattern %q does not compile: %v", *a.Pattern, err)
			default:
				op.Args.Pattern = re
			}
		}
	}
	op.AllowUIDs = buildIDs("allow_uids", fo.AllowUIDs, fail)
	op.AllowGIDs = buildIDs("allow_gids", fo.AllowGIDs, fail)
	if fo.Timeout != nil {
		d, ok := parseDuration("timeout", string(*fo.Timeout), fail)
		if ok && d <= 0 {
			fail("timeout", "timeout %q must be positive", *fo.Timeout)
		}
		op.Timeout = d
	}
	switch {
	case fo.OnBusy != nil:
		op.OnBusy = *fo.OnBusy
	case op.Exclusive:
		op.OnBusy = "join-or-queue"
	}
	if fo.OnDisconnect != nil {
		op.OnDisconnect = *fo.OnDisconnect
	}
	if r := fo.Retry; r != nil {
		if r.Attempts != nil {
			if *r.Attempts < 1 || *r.Attempts > maxAttempts {
				fail("retry.attempts", "retry.attempts must be between 1 and %d", maxAttempts)
			} else {
				op.Retry.Attempts = int(*r.Attempts)
			}
		}
		if r.Delay != nil {
			op.Retry.Delay, _ = parseDuration("retry.delay", string(*r.Delay), fail)
		}
		if r.MaxDelay != nil {
			op.Retry.MaxDelay, _ = parseDuration("retry.max_delay", string(*r.MaxDelay), fail)
		}
	}
	switch {
	case fo.Prefix != nil:
		op.Prefix = *fo.Prefix
	case op.Exec != nil && op.Unit == "" && opNameRE.MatchString(op.Name):
		op.Prefix = "unitrun-op-" + op.Name + "-"
	}
	return op, errs
}

// buildIDs converts allow_uids or allow_gids, reporting values that do not
// fit in 32 bits; checkOp rejects 4294967295.
func buildIDs(key string, vs []int64, fail func(key, format string, a ...any)) []uint32 {
	var ids []uint32
	for i, v := range vs {
		if v < 0 || v > math.MaxUint32 {
			fail(key, "%s[%d] = %d: must be between 0 and %d", key, i, v, uint32(math.MaxUint32-1))
			continue
		}
		ids = append(ids, uint32(v))
	}
	return ids
}

// buildLimits applies the [limits] table to DefaultLimits.
func buildLimits(fl *fileLimits) (Limits, []fieldError) {
	l := DefaultLimits()
	var errs []fieldError
	fail := func(key, format string, a ...any) {
		errs = append(errs, fieldError{key, fmt.Sprintf(format, a...)})
	}
	set := func(dst *int, v *int64) {
		if v != nil {
			*dst = clampInt(*v)
		}
	}
	set(&l.MaxRequestBytes, fl.MaxRequestBytes)
	set(&l.MaxLiveJobs, fl.MaxLiveJobs)
	set(&l.MaxLiveJobsPerUID, fl.MaxLiveJobsPerUID)
	set(&l.MaxConnectionsPerUID, fl.MaxConnectionsPerUID)
	set(&l.MaxSubscriptionsPerUID, fl.MaxSubscriptionsPerUID)
	set(&l.MaxQueue, fl.MaxQueue)
	set(&l.OutputTailBytes, fl.OutputTailBytes)
	set(&l.RecordsKeep, fl.RecordsKeep)
	setDuration := func(key string, dst *time.Duration, v *duration) {
		if v != nil {
			if d, ok := parseDuration(key, string(*v), fail); ok {
				*dst = d
			}
		}
	}
	setDuration("limits.records_max_age", &l.RecordsMaxAge, fl.RecordsMaxAge)
	setDuration("limits.read_header_timeout", &l.ReadHeaderTimeout, fl.ReadHeaderTimeout)
	setDuration("limits.idle_timeout", &l.IdleTimeout, fl.IdleTimeout)
	setDuration("limits.write_timeout", &l.WriteTimeout, fl.WriteTimeout)
	return l, errs
}

// clampInt converts v to int, saturating at the int32 range, which is
// beyond every limit, so that range checks reject huge values as they
// reject other large ones.
func clampInt(v int64) int {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < math.MinInt32:
		return math.MinInt32
	}
	return int(v)
}

// parseDuration parses a duration string such as "30m", reporting a value
// that is not one.
func parseDuration(key, s string, fail func(key, format string, a ...any)) (time.Duration, bool) {
	d, err := time.ParseDuration(s)
	if err != nil {
		fail(key, "%s %q is not a duration such as \"30m\" or \"1h30m\"", key, s)
		return 0, false
	}
	return d, true
}
