package api

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseResponse checks that ParseResponse never panics on any packet,
// and that every response EncodeResponse makes parses back to its status,
// job id and message, with NULs turned to spaces and invalid UTF-8 to
// U+FFFD, so that no job id or message can add a field.
func FuzzParseResponse(f *testing.F) {
	f.Add(true, "20261202T142501Z-0123abcd", "exit status 0")
	f.Add(false, "", "unknown_op: op \"x\x00y\": no such op")
	f.Add(false, "id\x00ok", "msg\x00\x00extra\xff")
	f.Add(true, "", "")
	f.Fuzz(func(t *testing.T, ok bool, id, msg string) {
		ParseResponse([]byte(id + "\x00" + msg))
		clean := func(s string) string { return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", " "), "\uFFFD") }
		gotOK, gotID, gotMsg, err := ParseResponse(EncodeResponse(ok, id, msg))
		if ok && clean(id) == "" {
			if err == nil {
				t.Fatalf("status ok without a job id parsed: %q", id)
			}
			return
		}
		if err != nil || gotOK != ok || gotID != clean(id) || gotMsg != clean(msg) || !utf8.ValidString(gotMsg) {
			t.Fatalf("EncodeResponse(%v, %q, %q) parsed as %v %q %q, %v", ok, id, msg, gotOK, gotID, gotMsg, err)
		}
	})
}
