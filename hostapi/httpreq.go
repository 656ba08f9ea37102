package hostapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/unitrun/unitrun/internal/lazyregexp"
)

// CallRequest is the body of POST /v1/ops/{name}.
type CallRequest struct {
	// Args are the caller's args for the op; absent means none.
	Args []string `json:"args"`
	// Wait asks for the response once the job has ended, with its final
	// record; false (the default) answers 202 Accepted with the job's id as
	// soon as the job is accepted.
	Wait bool `json:"wait"`
	// Key, if not empty, makes the call idempotent: a call of the same op
	// by the same uid with the same key gets the job the first one
	// started, as long as its record is kept, instead of a new job. It
	// must match [KeyPattern].
	Key string `json:"key,omitempty"`
}

// KeyPattern is the form of a call's idempotency key.
const KeyPattern = `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`

var keyRE = lazyregexp.New(KeyPattern)

// DecodeCallRequest decodes a CallRequest of at most limit bytes. An empty
// body is a request with no args that does not wait. The body must be one
// JSON object with no other keys than "args" (an array of strings, or
// null), "wait" (a boolean) and "key" (a string matching KeyPattern), and
// nothing after it. Errors are *Errors:
// CodeTooLarge for a body over limit, CodeBadRequest naming what is wrong.
func DecodeCallRequest(body io.Reader, limit int) (CallRequest, error) {
	data, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return CallRequest{}, errorf(CodeTooLarge, fmt.Sprintf("request body: larger than the limit of %d bytes (max_request_bytes)", limit))
	case err != nil:
		return CallRequest{}, errorf(CodeBadRequest, "request body: "+err.Error())
	case len(data) > limit:
		return CallRequest{}, errorf(CodeTooLarge, fmt.Sprintf("request body: larger than the limit of %d bytes (max_request_bytes)", limit))
	case len(bytes.Trim(data, " \t\r\n")) == 0:
		return CallRequest{Args: []string{}}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var req CallRequest
	if err := dec.Decode(&req); err != nil {
		return CallRequest{}, errorf(CodeBadRequest, "request body: "+err.Error()+` (want {"args": ["..."], "wait": true|false, "key": "..."})`)
	}
	if dec.More() {
		return CallRequest{}, errorf(CodeBadRequest, "request body: more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return CallRequest{}, errorf(CodeBadRequest, "request body: data after the JSON object")
	}
	if req.Key != "" && !keyRE.MatchString(req.Key) {
		return CallRequest{}, errorf(CodeBadRequest, fmt.Sprintf("request body: key %q: must match %s", req.Key, KeyPattern))
	}
	if req.Args == nil {
		req.Args = []string{}
	}
	return req, nil
}
