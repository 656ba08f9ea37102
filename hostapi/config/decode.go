package config

import (
	"errors"
	"fmt"
	"strings"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/unitrun/unitrun/internal/lazyregexp"
)

// keyTypes describes the value each key takes, for type errors.
var keyTypes = map[string]string{
	"op":                             "an array of [[op]] tables",
	"op.name":                        "a string",
	"op.exec":                        "an array of strings",
	"op.unit":                        "a string",
	"op.request_file":                "a string",
	"op.request_format":              "a string",
	"op.args":                        "a table such as { min = 0, max = 1, pattern = \"^[a-z]+$\" }",
	"op.allow_uids":                  "an array of integers",
	"op.allow_gids":                  "an array of integers",
	"op.timeout":                     "a duration string such as \"30m\"",
	"op.exclusive":                   "a boolean",
	"op.on_busy":                     "a string",
	"op.on_disconnect":               "a string",
	"op.bind_to_caller":              "a boolean",
	"op.args.min":                    "an integer",
	"op.args.max":                    "an integer",
	"op.args.pattern":                "a string",
	"op.retry":                       "a table such as { attempts = 5, delay = \"10s\", max_delay = \"5m\" }",
	"op.retry.attempts":              "an integer",
	"op.retry.delay":                 "a duration string such as \"10s\"",
	"op.retry.max_delay":             "a duration string such as \"5m\"",
	"op.env":                         "a table of strings",
	"op.env_passthrough":             "an array of strings",
	"op.reboot_marker":               "a string",
	"op.prefix":                      "a string",
	"limits":                         "a table",
	"limits.max_request_bytes":       "an integer",
	"limits.max_live_jobs":           "an integer",
	"limits.max_live_jobs_per_uid":   "an integer",
	"limits.max_connections_per_uid": "an integer",
	"limits.max_queue":               "an integer",
	"limits.output_tail_bytes":       "an integer",
	"limits.records_keep":            "an integer",
	"limits.records_max_age":         "a duration string such as \"720h\"",
}

// typeMismatch matches go-toml's message for a value of the wrong type and
// captures the TOML type found and the Go field it was meant for.
var typeMismatch = lazyregexp.New(`^toml: cannot decode TOML (\w+) into struct field [\w.]*?(\w+) of type`)

// decodeErrors turns go-toml's errors into ConfigErrors at their lines.
func decodeErrors(path string, isMain bool, err error) []*Error {
	var sme *toml.StrictMissingError
	if errors.As(err, &sme) {
		errs := make([]*Error, len(sme.Errors))
		for i := range sme.Errors {
			de := &sme.Errors[i]
			line, _ := de.Position()
			key := strings.Join(de.Key(), ".")
			rule := fmt.Sprintf("unknown key %q", key)
			if !isMain && key == "limits" {
				rule += " (only daemon.toml may set [limits])"
			}
			errs[i] = &Error{File: path, Line: line, Key: key, Rule: rule}
		}
		return errs
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		key := strings.Join(de.Key(), ".")
		rule := strings.TrimPrefix(de.Error(), "toml: ")
		if m := typeMismatch.FindStringSubmatch(de.Error()); m != nil {
			// For a value inside an inline table go-toml names the table;
			// the Go field names the key within it.
			if inner := key + "." + snakeCase(m[2]); keyTypes[inner] != "" {
				key = inner
			}
			if want, ok := keyTypes[key]; ok {
				rule = fmt.Sprintf("%s must be %s, not a TOML %s", strings.TrimPrefix(key, "op."), want, m[1])
			}
		}
		return []*Error{{File: path, Line: line, Key: key, Rule: rule}}
	}
	return []*Error{{File: path, Rule: err.Error()}}
}

// snakeCase turns a Go field name such as MaxDelay into its TOML key,
// max_delay.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
