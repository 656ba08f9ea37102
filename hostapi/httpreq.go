package hostapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// CallRequest is the body of POST /v1/ops/{name}.
type CallRequest struct {
	// Args are the caller's args for the op; absent means none.
	Args []string `json:"args"`
	// Wait asks for the response once the job has ended, with its final
	// record; false (the default) answers 202 Accepted with the job's id as
	// soon as the job is accepted.
	Wait bool `json:"wait"`
}

// DecodeCallRequest decodes a CallRequest of at most limit bytes. An empty
// body is a request with no args that does not wait. The body must be one
// JSON object with no other keys than "args" (an array of strings, or
// null) and "wait" (a boolean), and nothing after it. Errors are *Errors:
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
		return CallRequest{}, errorf(CodeBadRequest, "request body: "+err.Error()+` (want {"args": ["..."], "wait": true|false})`)
	}
	if dec.More() {
		return CallRequest{}, errorf(CodeBadRequest, "request body: more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return CallRequest{}, errorf(CodeBadRequest, "request body: data after the JSON object")
	}
	if req.Args == nil {
		req.Args = []string{}
	}
	return req, nil
}
