package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// contractTOML is the config of the host API issue's contract, verbatim.
const contractTOML = `[[op]]
name = "rebase"
exec = ["/usr/bin/rpm-ostree", "rebase"]      # caller args are appended
args = { max = 1, pattern = "^[A-Za-z0-9:/@._-]+$" }
allow_uids = [0]
allow_gids = []
timeout = "30m"
exclusive = true
on_disconnect = "continue"
reboot_marker = "/run/rebase-reboot-needed"
env = { RPMOSTREE_CLIENT_ID = "{caller}" }
env_passthrough = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"]

[[op]]
name = "pivot"
unit = "pivot.service"
request_file = "/etc/pivot/image-pull-spec"
args = { max = 1 }
allow_uids = [0]
`

// writeFiles writes name -> content under a new temp dir and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadConfigContract(t *testing.T) {
	dir := writeFiles(t, map[string]string{"daemon.toml": contractTOML})
	cfg, err := Load(filepath.Join(dir, "daemon.toml"), filepath.Join(dir, "ops.d"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{{
		Name:           "rebase",
		Exec:           []string{"/usr/bin/rpm-ostree", "rebase"},
		Args:           ArgsRule{Max: 1, Pattern: regexp.MustCompile(`^[A-Za-z0-9:/@._-]+$`)},
		AllowUIDs:      []uint32{0},
		Timeout:        30 * time.Minute,
		Exclusive:      true,
		OnBusy:         "join-or-queue",
		OnDisconnect:   "continue",
		Retry:          RetryRule{Attempts: 1},
		Env:            map[string]string{"RPMOSTREE_CLIENT_ID": "{caller}"},
		EnvPassthrough: []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"},
		RebootMarker:   "/run/rebase-reboot-needed",
		Prefix:         "unitrun-op-rebase-",
	}, {
		Name:          "pivot",
		Unit:          "pivot.service",
		RequestFile:   "/etc/pivot/image-pull-spec",
		RequestFormat: "lines",
		Args:          ArgsRule{Max: 1},
		AllowUIDs:     []uint32{0},
		OnDisconnect:  "continue",
		Retry:         RetryRule{Attempts: 1},
	}}
	if len(cfg.Ops) != len(want) {
		t.Fatalf("got %d ops, want %d", len(cfg.Ops), len(want))
	}
	for i := range want {
		got := cfg.Ops[i]
		if !sameOp(&got, &want[i]) {
			t.Errorf("op %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
	if cfg.Limits != DefaultLimits() {
		t.Errorf("limits = %+v, want defaults %+v", cfg.Limits, DefaultLimits())
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate of a loaded config: %v", err)
	}
}

// sameOp compares ops, patterns by their source and empty lists as nil.
func sameOp(a, b *Op) bool {
	norm := func(op Op) Op {
		if op.Args.Pattern != nil {
			op.Args.Pattern = regexp.MustCompile(op.Args.Pattern.String())
		}
		if len(op.AllowGIDs) == 0 {
			op.AllowGIDs = nil
		}
		if len(op.AllowUIDs) == 0 {
			op.AllowUIDs = nil
		}
		if len(op.Env) == 0 {
			op.Env = nil
		}
		return op
	}
	return reflect.DeepEqual(norm(*a), norm(*b))
}

func TestLoadConfigDropIns(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"daemon.toml": "[limits]\nmax_queue = 0\nrecords_max_age = \"48h\"\nread_header_timeout = \"2s\"\nidle_timeout = \"30s\"\nwrite_timeout = \"5s\"\n",
		// Read in name order: 10 before 20; files not named *.toml are skipped.
		"ops.d/20-b.toml":  "[[op]]\nname = \"b\"\nexec = [\"/bin/b\"]\n",
		"ops.d/10-a.toml":  "[[op]]\nname = \"a\"\nexec = [\"/bin/a\", \"{args}\", \"--end\"]\nargs = { min = 1, max = 2 }\nprefix = \"a-\"\n",
		"ops.d/README":     "not toml",
		"ops.d/x.toml.bak": "not toml",
		"ops.d/30-c.toml":  "op = [{ name = \"c\", unit = \"c.service\", request_file = \"/run/c\", request_format = \"nul\" }]\n",
		"ops.d/40-d.toml":  "[[op]]\nname = \"d\"\nexec = [\"/bin/d\"]\nexclusive = true\non_busy = \"join-or-refuse\"\nretry = { attempts = 5, delay = \"1s\", max_delay = \"1m\" }\n",
		"ops.d/50-e.toml":  "[[op]]\nname = \"e\"\nexec = [\"/bin/e\"]\n[op.args]\nmax = 3\npattern = \"^x\"\n",
		"ops.d/60-f.toml":  "[[op]]\nname = \"f\"\nexec = [\"/bin/f\"]\nenv.A = \"1\"\nargs.max = 1\n",
		"ops.d/70-g.toml":  "[[op]]\nname = \"g\"\nexec = [\"/bin/g\"]\nallow_gids = [10, 4294967294]\nbind_to_caller = true\non_disconnect = \"stop\"\n",
		"ops.d/80-h.toml":  "# no ops here\n",
	})
	cfg, err := Load(filepath.Join(dir, "daemon.toml"), filepath.Join(dir, "ops.d"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, op := range cfg.Ops {
		names = append(names, op.Name)
	}
	if got := strings.Join(names, " "); got != "a b c d e f g" {
		t.Errorf("ops = %q, want %q", got, "a b c d e f g")
	}
	wantLimits := DefaultLimits()
	wantLimits.MaxQueue = 0
	wantLimits.RecordsMaxAge = 48 * time.Hour
	wantLimits.ReadHeaderTimeout = 2 * time.Second
	wantLimits.IdleTimeout = 30 * time.Second
	wantLimits.WriteTimeout = 5 * time.Second
	if cfg.Limits != wantLimits {
		t.Errorf("limits = %+v, want %+v", cfg.Limits, wantLimits)
	}
	a, c, d, e, f, g := cfg.Ops[0], cfg.Ops[2], cfg.Ops[3], cfg.Ops[4], cfg.Ops[5], cfg.Ops[6]
	if a.Prefix != "a-" || a.Args.Min != 1 || a.Args.Max != 2 {
		t.Errorf("op a = %+v", a)
	}
	if c.RequestFormat != "nul" || c.Prefix != "" || c.OnBusy != "" {
		t.Errorf("op c = %+v", c)
	}
	if d.OnBusy != "join-or-refuse" || d.Retry != (RetryRule{5, time.Second, time.Minute}) {
		t.Errorf("op d = %+v", d)
	}
	if e.Args.Max != 3 || e.Args.Pattern.String() != "^x" {
		t.Errorf("op e = %+v", e)
	}
	if f.Env["A"] != "1" || f.Args.Max != 1 {
		t.Errorf("op f = %+v", f)
	}
	if !reflect.DeepEqual(g.AllowGIDs, []uint32{10, 4294967294}) || !g.BindToCaller || g.OnDisconnect != "stop" {
		t.Errorf("op g = %+v", g)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate of a loaded config: %v", err)
	}
}

func TestLoadConfigMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "daemon.toml"), "")
	want := filepath.Join(dir, "daemon.toml") + ": cannot read: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	// A missing ops dir holds no ops.
	dir = writeFiles(t, map[string]string{"daemon.toml": ""})
	cfg, err := Load(filepath.Join(dir, "daemon.toml"), filepath.Join(dir, "nope"))
	if err != nil || len(cfg.Ops) != 0 {
		t.Errorf("cfg, err = %+v, %v; want no ops", cfg, err)
	}
	// A drop-in that cannot be read is an error, not skipped.
	if err := os.MkdirAll(filepath.Join(dir, "ops.d", "a.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Load(filepath.Join(dir, "daemon.toml"), filepath.Join(dir, "ops.d"))
	want = filepath.Join(dir, "ops.d", "a.toml") + ": cannot read: is a directory"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// op is a minimal valid op, to which tests add lines.
const op = "[[op]]\nname = \"x\"\nexec = [\"/bin/x\"]\n"

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		daemon  string
		dropIns map[string]string
		want    string // the error, with "D" for daemon.toml's path and "O" for the ops dir
	}{
		{"syntax", "[[op]\n", nil, `D:1: expected ']]' to close array table name`},
		{"unknown key", op + "shell = true\n", nil, `D:4: unknown key "op.shell"`},
		{"unknown key in inline table", op + "args = { max = 1, maxx = 2 }\n", nil, `D:4: unknown key "op.args.maxx"`},
		{"unknown key in a sub-table", op + "[op.retry]\nattempts = 2\nbackoff = \"1s\"\n", nil, `D:6: unknown key "op.retry.backoff"`},
		{"unknown key in limits", "[limits]\nmax_queue = 1\nmax_jobs = 2\n", nil, `D:3: unknown key "limits.max_jobs"`},
		{"keys are case-sensitive", "[[op]]\nName = \"x\"\nexec = [\"/bin/x\"]\n", nil, `D:2: unknown key "op.Name"`},
		{"unknown top-level key", "verbose = true\n", nil, `D:1: unknown key "verbose"`},
		{"limits in drop-in", "", map[string]string{"a.toml": "[limits]\nmax_queue = 1\n"}, `O/a.toml:1: unknown key "limits" (only daemon.toml may set [limits])`},
		{"wrong type", op + "exclusive = \"yes\"\n", nil, `D:4: exclusive must be a boolean, not a TOML string`},
		{"wrong type exec", "[[op]]\nname = \"x\"\nexec = \"/bin/x\"\n", nil, `D:3: exec must be an array of strings, not a TOML string`},
		{"wrong type in inline table", op + "args = { max = \"1\" }\n", nil, `D:4: args.max must be an integer, not a TOML string`},
		{"wrong type in retry", op + "retry = { attempts = 2, delay = 5 }\n", nil, `D:4: retry.delay must be a duration string such as "10s", not a TOML integer`},
		{"wrong type in an array", op + "allow_uids = [0,\n  \"root\"]\n", nil, `D:5: allow_uids[1] must be an integer, not a TOML string`},
		{"wrong type in env", op + "env.A = 1\n", nil, `D:4: env.A must be a string, not a TOML integer`},
		{"wrong type of table", op + "args = 3\n", nil, `D:4: args must be a table such as { min = 0, max = 1, pattern = "^[a-z]+$" }, not a TOML integer`},
		{"wrong type of op", "op = { name = \"x\" }\n", nil, `D:1: op must be an array of [[op]] tables, not a TOML table`},
		{"wrong type of an inline op", "op = [\n  \"x\",\n]\n", nil, `D:2: op[0] must be a table, not a TOML string`},
		{"wrong type of limits", "limits = [1]\n", nil, `D:1: limits must be a table, not a TOML array`},
		{"date for a duration", "[limits]\nidle_timeout = 1979-05-27 07:32:00\n", nil, `D:2: limits.idle_timeout must be a duration string such as "2m", not a TOML local date-time`},
		{"float for an integer", "[limits]\nmax_queue = 1.5\n", nil, `D:2: limits.max_queue must be an integer, not a TOML float`},
		{"several wrong types", op + "exclusive = \"yes\"\n\n[[op]]\nname = 5\n", nil, "D:4: exclusive must be a boolean, not a TOML string\nD:6: exactly one of exec and unit must be set\nD:7: name must be a string, not a TOML integer"},
		{"wrong type and a rule", "[[op]]\nname = \"x\"\nexec = [\"x\"]\ntimeout = 5\n\n[limits]\nmax_queue = -1\n", nil, "D:3: op \"x\": exec[0] must be an absolute path\nD:4: timeout must be a duration string such as \"30m\", not a TOML integer\nD:7: limits.max_queue must be between 0 and 65536"},
		{"wrong type, not what follows from it", op + "exclusive = \"yes\"\non_busy = \"join-or-refuse\"\nargs = { min = \"1\", max = 0 }\n", nil, "D:4: exclusive must be a boolean, not a TOML string\nD:6: args.min must be an integer, not a TOML string"},
		{"unknown key and the rules of keys written", "[[op]]\nname = \"Bad Name\"\nexec = [\"/bin/x\"]\ntimeout = \"forever\"\nbogus = 1\n\n[limits]\nmax_jobs = 2\nmax_queue = -1\n", nil, "D:2: op \"Bad Name\": name \"Bad Name\" must match ^[a-z0-9][a-z0-9_-]{0,62}$\nD:4: op \"Bad Name\": timeout \"forever\" is not a duration such as \"30m\" or \"1h30m\"\nD:5: unknown key \"op.bogus\"\nD:8: unknown key \"limits.max_jobs\"\nD:9: limits.max_queue must be between 0 and 65536"},
		{"unknown key, not what follows from it", op + "exclusiv = true\non_busy = \"join-or-refuse\"\nargs = { min = 2, mxa = 3 }\n", nil, "D:4: unknown key \"op.exclusiv\"\nD:6: unknown key \"op.args.mxa\""},
		{"duplicate key", "[[op]]\nname = \"x\"\nname = \"y\"\n", nil, `D:3: key name is already defined`},
		{"name missing", "[[op]]\nexec = [\"/bin/x\"]\n", nil, `D:1: name is required`},
		{"name rule", "[[op]]\nname = \"Rebase\"\nexec = [\"/bin/x\"]\n", nil, `D:2: op "Rebase": name "Rebase" must match ^[a-z0-9][a-z0-9_-]{0,62}$`},
		{"name too long", "[[op]]\nname = \"" + strings.Repeat("a", 64) + "\"\nexec = [\"/bin/x\"]\n", nil, `D:2: op "` + strings.Repeat("a", 64) + `": name "` + strings.Repeat("a", 64) + `" must match ^[a-z0-9][a-z0-9_-]{0,62}$`},
		{"exec and unit", "\n[[op]]\nname = \"x\"\nexec = [\"/bin/x\"]\nunit = \"x.service\"\n", nil, `D:2: op "x": exactly one of exec and unit must be set, not both`},
		{"neither exec nor unit", "[[op]]\nname = \"x\"\n", nil, `D:1: op "x": exactly one of exec and unit must be set`},
		{"exec empty", "[[op]]\nname = \"x\"\nexec = []\n", nil, `D:3: op "x": exec must not be empty`},
		{"exec relative", "", map[string]string{"rebase.toml": "# rebase\n\n[[op]]\nname = \"rebase\"\nexec = [\"rpm-ostree\", \"rebase\"]\n"}, `O/rebase.toml:5: op "rebase": exec[0] must be an absolute path`},
		{"exec NUL", "[[op]]\nname = \"x\"\nexec = [\"/bin/x\", \"a\\u0000b\"]\n", nil, `D:3: op "x": exec[1] must not contain NUL`},
		{"exec args twice", "[[op]]\nname = \"x\"\nexec = [\"/bin/x\", \"{args}\", \"{args}\"]\n", nil, `D:3: op "x": exec may hold the word {args} at most once`},
		{"unit chars", "[[op]]\nname = \"x\"\nunit = \"a b.service\"\n", nil, `D:3: op "x": unit name "a b.service": character ' ' not allowed (allowed: ASCII letters, digits, ":-_.\\@")`},
		{"unit suffix", "[[op]]\nname = \"x\"\nunit = \"pivot.serv\"\n", nil, `D:3: op "x": unit name "pivot.serv": unknown type suffix ".serv" (want one of .service .socket .target .slice .scope .timer .path .mount .automount .swap .device)`},
		{"unit not service", "[[op]]\nname = \"x\"\nunit = \"reboot.target\"\n", nil, `D:3: op "x": unit "reboot.target" must be a .service unit`},
		{"unit template", "[[op]]\nname = \"x\"\nunit = \"pivot@.service\"\n", nil, `D:3: op "x": unit "pivot@.service" is a template: name an instance, such as "pivot@NAME.service"`},
		{"unit too long", "[[op]]\nname = \"x\"\nunit = \"" + strings.Repeat("a", 250) + ".service\"\n", nil, `D:3: op "x": unit name "` + strings.Repeat("a", 250) + `.service": 258 bytes long (max 255)`},
		{"request_file with exec", op + "request_file = \"/run/x\"\n", nil, `D:4: op "x": request_file needs unit (an exec op gets its args as argv)`},
		{"request_file relative", "[[op]]\nname = \"x\"\nunit = \"x.service\"\nrequest_file = \"run/x\"\n", nil, `D:4: op "x": request_file "run/x" must be an absolute path in clean form`},
		{"request_file unclean", "[[op]]\nname = \"x\"\nunit = \"x.service\"\nrequest_file = \"/run/../x\"\n", nil, `D:4: op "x": request_file "/run/../x" must be an absolute path in clean form`},
		{"request_file named *.toml", "[[op]]\nname = \"x\"\nunit = \"x.service\"\nrequest_file = \"/etc/unitrun/ops.d/x.toml\"\n", nil, `D:4: op "x": request_file "/etc/unitrun/ops.d/x.toml" must not be named *.toml: callers' args are written to it, and the daemon reads its config from *.toml files`},
		{"request_format without file", "[[op]]\nname = \"x\"\nunit = \"x.service\"\nrequest_format = \"nul\"\n", nil, `D:4: op "x": request_format needs request_file`},
		{"request_format value", "[[op]]\nname = \"x\"\nunit = \"x.service\"\nrequest_file = \"/run/x\"\nrequest_format = \"json\"\n", nil, `D:5: op "x": request_format "json" must be "lines" or "nul"`},
		{"pattern compiles", op + "args = { max = 1, pattern = \"(\" }\n", nil, `D:4: op "x": args.pattern "(" does not compile: error parsing regexp: missing closing ): ` + "`(`"},
		{"pattern empty", op + "args = { max = 1, pattern = \"\" }\n", nil, `D:4: op "x": args.pattern must not be empty`},
		{"pattern without max", op + "args = { pattern = \"^a$\" }\n", nil, `D:4: op "x": args.pattern needs args.max of at least 1`},
		{"min negative", op + "[op.args]\nmax = 1\nmin = -1\n", nil, `D:6: op "x": args.min must be at least 0`},
		{"max below min", op + "args = { min = 2,\n  max = 1 }\n", nil, `D:5: op "x": args.max (1) must be at least args.min (2)`},
		{"uid negative", op + "allow_uids = [1, -1]\n", nil, `D:4: op "x": allow_uids[1] = -1: must be between 0 and 4294967294`},
		{"gid too big", op + "allow_gids = [4294967295]\n", nil, `D:4: op "x": allow_gids[0] = 4294967295: must be between 0 and 4294967294`},
		{"timeout syntax", op + "timeout = \"30 minutes\"\n", nil, `D:4: op "x": timeout "30 minutes" is not a duration such as "30m" or "1h30m"`},
		{"timeout zero", op + "timeout = \"0s\"\n", nil, `D:4: op "x": timeout "0s" must be positive`},
		{"on_busy without exclusive", op + "on_busy = \"join-or-refuse\"\n", nil, `D:4: op "x": on_busy needs exclusive = true`},
		{"on_busy value without exclusive", op + "on_busy = \"whatever\"\n", nil, `D:4: op "x": on_busy "whatever" must be "join-or-queue" or "join-or-refuse", and needs exclusive = true`},
		{"on_busy value", op + "exclusive = true\non_busy = \"queue\"\n", nil, `D:5: op "x": on_busy "queue" must be "join-or-queue" or "join-or-refuse"`},
		{"on_disconnect value", op + "on_disconnect = \"kill\"\n", nil, `D:4: op "x": on_disconnect "kill" must be "continue" or "stop"`},
		{"bind_to_caller with unit", "[[op]]\nname = \"x\"\nunit = \"x.service\"\nbind_to_caller = true\n", nil, `D:4: op "x": bind_to_caller needs exec (the dependencies of an existing unit are its own)`},
		{"retry attempts", op + "retry = { attempts = 0 }\n", nil, `D:4: op "x": retry.attempts must be between 1 and 100`},
		{"retry delay without attempts", op + "retry = { delay = \"1s\" }\n", nil, `D:4: op "x": retry.delay and retry.max_delay need retry.attempts of at least 2`},
		{"retry delay negative", op + "retry = { attempts = 2, delay = \"-1s\" }\n", nil, `D:4: op "x": retry.delay must not be negative`},
		{"retry max below delay", op + "[op.retry]\nattempts = 3\ndelay = \"10s\"\nmax_delay = \"1s\"\n", nil, `D:7: op "x": retry.max_delay (1s) must be at least retry.delay (10s)`},
		{"env name", op + "env = { \"A-B\" = \"1\" }\n", nil, `D:4: op "x": env key "A-B" must be a POSIX name (^[A-Za-z_][A-Za-z0-9_]*$)`},
		{"env newline", op + "env = {\n  A = \"ok\",\n  B = \"x\\ny\" }\n", nil, `D:6: op "x": env.B must not contain NUL or a newline`},
		{"env_passthrough name", op + "env_passthrough = [\"HTTP_PROXY\", \"1X\"]\n", nil, `D:4: op "x": env_passthrough[1] "1X" must be a POSIX name (^[A-Za-z_][A-Za-z0-9_]*$)`},
		{"env_passthrough twice", op + "env_passthrough = [\"A\", \"A\"]\n", nil, `D:4: op "x": env_passthrough names "A" twice`},
		{"env_passthrough in env", op + "env = { A = \"1\" }\nenv_passthrough = [\"A\"]\n", nil, `D:5: op "x": env_passthrough[0] "A" is also set in env`},
		{"reboot_marker relative", op + "reboot_marker = \"run/x\"\n", nil, `D:4: op "x": reboot_marker "run/x" must be an absolute path in clean form`},
		{"prefix with unit", "[[op]]\nname = \"x\"\nunit = \"x.service\"\nprefix = \"x-\"\n", nil, `D:4: op "x": prefix needs exec (only transient units are named by unitrun)`},
		{"prefix chars", op + "prefix = \"x@\"\n", nil, `D:4: op "x": prefix: unit name prefix "x@": character '@' not allowed (allowed: ASCII letters, digits, ":-_.\\")`},
		{"prefix empty", op + "prefix = \"\"\n", nil, `D:4: op "x": prefix must not be empty`},
		{"prefix long", op + "prefix = \"" + strings.Repeat("p", 230) + "\"\n", nil, `D:4: op "x": prefix: unit name prefix "` + strings.Repeat("p", 230) + `": 230 bytes long (max 229, so that a random name fits in 255)`},
		{"limits range", "\n[limits]\nmax_request_bytes = 10\n", nil, `D:3: limits.max_request_bytes must be between 256 and 16777216`},
		{"limits huge", "[limits]\nmax_live_jobs = 99999999999\n", nil, `D:2: limits.max_live_jobs must be between 1 and 65536`},
		{"connections per uid", "[limits]\nmax_connections_per_uid = -1\n", nil, `D:2: limits.max_connections_per_uid must be between 0 and 65536`},
		{"limits age", "limits = { records_max_age = \"1s\" }\n", nil, `D:1: limits.records_max_age must be at least 1m0s`},
		{"header timeout range", "[limits]\nread_header_timeout = \"0s\"\n", nil, `D:2: limits.read_header_timeout must be between 100ms and 10m0s`},
		{"idle timeout range", "[limits]\nidle_timeout = \"48h\"\n", nil, `D:2: limits.idle_timeout must be between 1s and 24h0m0s`},
		{"write timeout range", "[limits]\nwrite_timeout = \"1ms\"\n", nil, `D:2: limits.write_timeout must be between 100ms and 1h0m0s`},
		{"idle timeout syntax", "[limits]\nidle_timeout = \"soon\"\n", nil, `D:2: limits.idle_timeout "soon" is not a duration such as "30m" or "1h30m"`},
		{"limits age syntax", "[limits]\nrecords_max_age = \"forever\"\n", nil, `D:2: limits.records_max_age "forever" is not a duration such as "30m" or "1h30m"`},
		{"duplicate op in one file", op + "\n" + op, nil, `D:5: op "x": already defined at D:1`},
		{"duplicate op in two files", op, map[string]string{"a.toml": "\n" + op}, `O/a.toml:2: op "x": already defined at D:1`},
		{"duplicate op in drop-ins", "", map[string]string{"b.toml": op, "a.toml": op}, `O/b.toml:1: op "x": already defined at O/a.toml:1`},
		{"inline op error", "op = [\n  { name = \"a\", exec = [\"/bin/a\"] },\n  { name = \"b\", exec = [\"b\"] },\n]\n", nil, `D:3: op "b": exec[0] must be an absolute path`},
		{"several errors", op + "timeout = \"x\"\n\n[[op]]\nname = \"y\"\nexec = [\"y\"]\n", nil, "D:4: op \"x\": timeout \"x\" is not a duration such as \"30m\" or \"1h30m\"\nD:8: op \"y\": exec[0] must be an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"daemon.toml": tt.daemon}
			for name, content := range tt.dropIns {
				files["ops.d/"+name] = content
			}
			dir := writeFiles(t, files)
			daemon, opsDir := filepath.Join(dir, "daemon.toml"), filepath.Join(dir, "ops.d")
			cfg, err := Load(daemon, opsDir)
			if err == nil {
				t.Fatalf("Load accepted it: %+v", cfg)
			}
			want := strings.NewReplacer("D:", daemon+":", "O/", opsDir+"/").Replace(tt.want)
			if err.Error() != want {
				t.Errorf("err =\n%s\nwant\n%s", err, want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("err is a %T, not an *Error", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	valid := Op{Name: "x", Exec: []string{"/bin/x"}, OnDisconnect: "continue", Retry: RetryRule{Attempts: 1}, Prefix: "x-"}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"valid", Config{Ops: []Op{valid}, Limits: DefaultLimits()}, ""},
		{"zero limits", Config{Ops: []Op{valid}}, "limits.max_request_bytes must be between 256 and 16777216\nlimits.max_live_jobs must be between 1 and 65536\nlimits.max_subscriptions_per_uid must be between 1 and 65536\nlimits.records_keep must be between 1 and 1000000\nlimits.records_max_age must be at least 1m0s\nlimits.read_header_timeout must be between 100ms and 10m0s\nlimits.idle_timeout must be between 1s and 24h0m0s\nlimits.write_timeout must be between 100ms and 1h0m0s"},
		{"defaults not applied", Config{Ops: []Op{{Name: "x", Exec: []string{"/bin/x"}}}, Limits: DefaultLimits()}, "op \"x\": on_disconnect \"\" must be \"continue\" or \"stop\"\nop \"x\": retry.attempts must be between 1 and 100\nop \"x\": prefix must not be empty"},
		{"uid -1", Config{Ops: []Op{func() Op { o := valid; o.AllowUIDs = []uint32{1<<32 - 1}; return o }()}, Limits: DefaultLimits()}, "op \"x\": allow_uids[0] = 4294967295: must be between 0 and 4294967294"},
		{"twice", Config{Ops: []Op{valid, valid}, Limits: DefaultLimits()}, "op \"x\": defined twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
