package front_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/front"
)

// FuzzDecodeCallRequest checks that DecodeCallRequest never panics, that
// every error is an *Error with a code a caller can act on, and that what
// it accepts encodes back to a body it decodes to the same request. Its
// seeds are in testdata/fuzz/FuzzDecodeCallRequest.
func FuzzDecodeCallRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		const limit = 1 << 10
		req, err := front.DecodeCallRequest(bytes.NewReader(body), limit)
		if err != nil {
			var e *api.Error
			if !errors.As(err, &e) || (e.Code != api.CodeBadRequest && e.Code != api.CodeTooLarge) {
				t.Fatalf("error %v: want an *Error with code bad_request or too_large", err)
			}
			if (e.Code == api.CodeTooLarge) != (len(body) > limit) {
				t.Fatalf("body of %d bytes: code %s", len(body), e.Code)
			}
			return
		}
		if req.Args == nil {
			t.Fatal("accepted request with nil Args")
		}
		if !utf8.Valid(body) {
			t.Fatal("accepted a body that is not valid UTF-8")
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := front.DecodeCallRequest(bytes.NewReader(again), len(again))
		if err != nil || back.Wait != req.Wait || back.Key != req.Key || !slices.Equal(back.Args, req.Args) {
			t.Fatalf("re-encoded %s: %+v, %v, want %+v", again, back, err, req)
		}
	})
}

// TestSecurityArgsNotUTF8 sends args that encoding/json would change into
// U+FFFD: bytes that are not UTF-8 and lone surrogate escapes. Each call
// is refused naming the arg, and args that are valid (a surrogate pair, a
// U+FFFD sent as such, escaped backslashes before a u) decode exactly.
func TestSecurityArgsNotUTF8(t *testing.T) {
	for _, body := range []string{
		"{\"args\": [\"ok\", \"a\xffb\"]}",
		"{\"args\": [\"ok\", \"\xed\xa0\x80\"]}",
		`{"args": ["ok", "\ud800"]}`,
		`{"args": ["ok", "x\udc00y"]}`,
		`{"args": ["ok", "\ud800\u0041"]}`,
		`{"args": ["ok", "\ud800\\udc00"]}`,
	} {
		_, err := front.DecodeCallRequest(strings.NewReader(body), 1<<10)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.CodeBadRequest || !strings.Contains(e.Message, "arg 1: ") {
			t.Errorf("%q: %v, want bad_request naming arg 1", body, err)
		}
	}
	for body, want := range map[string][]string{
		`{"args": ["\ud83d\ude00", "\ufffd", "\\ud800", "\uFFFD\u00e9"]}`: {"😀", "\ufffd", `\ud800`, "\ufffdé"},
		`{"args": ["` + "\xef\xbf\xbd" + `"]}`:                            {"\ufffd"},
	} {
		req, err := front.DecodeCallRequest(strings.NewReader(body), 1<<10)
		if err != nil || !slices.Equal(req.Args, want) {
			t.Errorf("%q: %q, %v, want %q", body, req.Args, err, want)
		}
	}
}
