package front_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestCallBodyErrors checks that a call body the daemon refuses is
// refused naming the field and the rule in the caller's words, with no
// Go type or encoding/json text, over HTTP and for every kind of fault.
func TestCallBodyErrors(t *testing.T) {
	const shape = `{"args": ["..."], "wait": true|false, "key": "..."}`
	for body, want := range map[string]string{
		`{"args":"x"}`:                    "args must be a list of strings",
		`{"args":["a", 1]}`:               "args must be a list of strings",
		`{"wait":"yes"}`:                  "wait must be true or false",
		`{"key":3}`:                       "key must be a string",
		`nope`:                            "the body is not JSON: invalid character 'o' in literal null (expecting 'u') at byte 2",
		`{"args":["a"],}`:                 "the body is not JSON: invalid character '}' looking for beginning of object key string at byte 15",
		`{"args": [`:                      "the body is not JSON: it ends at byte 10, within a value",
		`["a"]`:                           "the body must be a JSON object such as " + shape + ", not a list",
		`{"argz": []}`:                    `field "argz" is not known: the body is ` + shape,
		`null`:                            "the body must be a JSON object such as " + shape + ", not null",
		` null `:                          "the body must be a JSON object such as " + shape + ", not null",
		`"str"`:                           "the body must be a JSON object such as " + shape + ", not a string",
		`{"ARGS":["a"]}`:                  `field "ARGS" is not known: the body is ` + shape,
		`{"args":["a"],"WAIT":true}`:      `field "WAIT" is not known: the body is ` + shape,
		`{"Key":"k"}`:                     `field "Key" is not known: the body is ` + shape,
		`{"args":["a"],"args":["b","c"]}`: `field "args" is given twice`,
		`{"wait":true,"wait":true}`:       `field "wait" is given twice`,
		`{"args":null}`:                   "args must be a list of strings, not null",
		`{"wait":null}`:                   "wait must be true or false, not null",
		`{"key":null}`:                    "key must be a string, not null",
		`{"args": []} {"args": []}`:       "the body holds more than one JSON value: more follows at byte 14",
		`{"key": "a b"}`:                  `key "a b": must match ` + api.KeyPattern,
		"{\"wait\": true, \"x\xff\": 1}":  "the body: not valid UTF-8",
	} {
		_, err := front.DecodeCallRequest(strings.NewReader(body), 1<<10)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.CodeBadRequest || e.Message != want {
			t.Errorf("%q: %v; want bad_request: %s", body, err, want)
		}
	}
	_, err := front.DecodeCallRequest(strings.NewReader(`{"args": []}`), 5)
	if want := "too_large: the body is larger than the limit of 5 bytes (max_request_bytes)"; err == nil || err.Error() != want {
		t.Errorf("body over the limit: %v; want %s", err, want)
	}

	// As a caller sees it.
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	apiSock, _ := serveTest(t, d)
	status, body := daemontest.Curl(t, apiSock, nil, "-X", "POST", "-d", `{"args":"x"}`, "http://unitrun/v1/ops/echo")
	if want := `{"error":{"code":"bad_request","message":"args must be a list of strings"}}`; status != 400 || strings.TrimSpace(body) != want {
		t.Errorf("HTTP call with args a string: %d %s; want 400 and %s", status, body, want)
	}
	status, body = daemontest.Curl(t, apiSock, nil, "-X", "POST", "-d", `{"args":["a"],"args":["b","c"]}`, "http://unitrun/v1/ops/echo")
	if want := `{"error":{"code":"bad_request","message":"field \"args\" is given twice"}}`; status != 400 || strings.TrimSpace(body) != want {
		t.Errorf("HTTP call with args twice: %d %s; want 400 and %s", status, body, want)
	}
}
