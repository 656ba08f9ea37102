package hostapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// FuzzDecodeCallRequest checks that DecodeCallRequest never panics, that
// every error is an *Error with a code a caller can act on, and that what
// it accepts encodes back to a body it decodes to the same request. Its
// seeds are in testdata/fuzz/FuzzDecodeCallRequest.
func FuzzDecodeCallRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		const limit = 1 << 10
		req, err := DecodeCallRequest(bytes.NewReader(body), limit)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Code != CodeBadRequest && e.Code != CodeTooLarge) {
				t.Fatalf("error %v: want an *Error with code bad_request or too_large", err)
			}
			if (e.Code == CodeTooLarge) != (len(body) > limit) {
				t.Fatalf("body of %d bytes: code %s", len(body), e.Code)
			}
			return
		}
		if req.Args == nil {
			t.Fatal("accepted request with nil Args")
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeCallRequest(bytes.NewReader(again), len(again))
		if err != nil || back.Wait != req.Wait || back.Key != req.Key || !slices.Equal(back.Args, req.Args) {
			t.Fatalf("re-encoded %s: %+v, %v, want %+v", again, back, err, req)
		}
	})
}
