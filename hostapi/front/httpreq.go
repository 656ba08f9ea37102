package front

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/unitrun/unitrun/api"
)

// DecodeCallRequest decodes a CallRequest of at most limit bytes. An empty
// body is a request with no args that does not wait. The body must be one
// JSON object (not null) with no other keys than "args" (an array of
// strings), "wait" (a boolean) and "key" (a string matching
// api.KeyPattern), each written so, at most once and not null, and
// nothing after it. The body must be valid UTF-8 and escape no lone
// UTF-16 surrogate (such as \ud800), which encoding/json would turn into
// U+FFFD: an arg reaches the op as it was sent, or not at all. Errors are *api.Errors:
// CodeTooLarge for a body over limit, CodeBadRequest naming what is wrong.
func DecodeCallRequest(body io.Reader, limit int) (api.CallRequest, error) {
	data, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return api.CallRequest{}, errorf(api.CodeTooLarge, tooLarge(limit))
	case err != nil:
		return api.CallRequest{}, errorf(api.CodeBadRequest, "the body cannot be read: "+err.Error())
	case len(data) > limit:
		return api.CallRequest{}, errorf(api.CodeTooLarge, tooLarge(limit))
	case len(bytes.Trim(data, " \t\r\n")) == 0:
		return api.CallRequest{Args: []string{}}, nil
	}
	if err := checkJSONText(data); err != nil {
		return api.CallRequest{}, errorf(api.CodeBadRequest, whereInArgs(data)+err.Error())
	}
	var req api.CallRequest
	if err := decodeJSON(data, &req, callShape); err != nil {
		return api.CallRequest{}, errorf(api.CodeBadRequest, err.Error())
	}
	if req.Key != "" && !api.ValidKey(req.Key) {
		return api.CallRequest{}, errorf(api.CodeBadRequest, fmt.Sprintf("key %q: must match %s", req.Key, api.KeyPattern))
	}
	if req.Args == nil {
		req.Args = []string{}
	}
	return req, nil
}

// callShape is the body of a call, as errors show it.
const callShape = `{"args": ["..."], "wait": true|false, "key": "..."}`

// tooLarge says that a body is over limit.
func tooLarge(limit int) string {
	return fmt.Sprintf("the body is larger than the limit of %d bytes (max_request_bytes)", limit)
}

// checkJSONText returns what in data encoding/json would silently replace
// by U+FFFD, if anything: bytes that are not valid UTF-8, or a \u escape
// of a UTF-16 surrogate that is not half of a pair.
func checkJSONText(data []byte) error {
	if !utf8.Valid(data) {
		return errors.New("not valid UTF-8")
	}
	// In valid JSON a backslash occurs only in a string, before the
	// character it escapes; invalid JSON is the decoder's to report.
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		i++ // the escaped character
		r, ok := hexEscape(data[i:])
		if !ok || !utf16.IsSurrogate(r) {
			continue
		}
		if r < 0xdc00 && i+5 < len(data) && data[i+5] == '\\' {
			if low, ok := hexEscape(data[i+6:]); ok && low >= 0xdc00 && low <= 0xdfff {
				i += 10 // the last digit of the pair's second escape
				continue
			}
		}
		return fmt.Errorf("the escape \\%s is half of a UTF-16 surrogate pair, not a character", data[i:i+5])
	}
	return nil
}

// hexEscape returns the code unit of the escape "uXXXX" that b starts with.
func hexEscape(b []byte) (rune, bool) {
	if len(b) < 5 || b[0] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[1:5]), 16, 16)
	return rune(v), err == nil
}

// whereInArgs returns "arg N: " for the first arg of the body data in
// which checkJSONText finds fault, or "the body: " when it is not in an arg.
func whereInArgs(data []byte) string {
	var raw struct {
		Args []json.RawMessage `json:"args"`
	}
	json.Unmarshal(data, &raw)
	for i, a := range raw.Args {
		if checkJSONText(a) != nil {
			return fmt.Sprintf("arg %d: ", i)
		}
	}
	return "the body: "
}
