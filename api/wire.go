package api

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The SOCK_SEQPACKET protocol is one request packet and one response packet
// per connection.
//
// A request holds NUL-separated strings: the op name, then its args. One
// trailing NUL is allowed and ignored, so "op\x00" is op with no args and an
// empty last arg needs a NUL after it ("op\x00\x00" is op with one empty
// arg). EncodeRequest always ends each string with a NUL.
//
// A response holds three NUL-separated strings: "ok" or "error", the job id
// ("" when no job was created) and a message. A NUL may follow the message.

// ParseRequest parses a request packet of at most limit bytes. Every string
// must be valid UTF-8 and the op name must not be empty.
func ParseRequest(pkt []byte, limit int) (op string, args []string, err error) {
	switch {
	case len(pkt) == 0:
		return "", nil, errors.New("request: empty packet")
	case len(pkt) > limit:
		return "", nil, fmt.Errorf("request: packet of %d bytes is larger than the limit of %d", len(pkt), limit)
	}
	fields := strings.Split(string(bytes.TrimSuffix(pkt, []byte{0})), "\x00")
	for i, f := range fields {
		if !utf8.ValidString(f) {
			if i == 0 {
				return "", nil, errors.New("request: op name is not valid UTF-8")
			}
			return "", nil, fmt.Errorf("request: arg %d is not valid UTF-8", i-1)
		}
	}
	if fields[0] == "" {
		return "", nil, errors.New("request: op name is empty")
	}
	return fields[0], fields[1:], nil
}

// EncodeRequest returns the request packet for op and args. It refuses an
// empty op name, a string with a NUL and one that is not valid UTF-8, which
// ParseRequest would not return as given.
func EncodeRequest(op string, args []string) ([]byte, error) {
	if op == "" {
		return nil, errors.New("request: op name is empty")
	}
	pkt := make([]byte, 0, RequestBytes(op, args))
	for i, s := range append([]string{op}, args...) {
		what := "op name"
		if i > 0 {
			what = fmt.Sprintf("arg %d", i-1)
		}
		switch {
		case strings.IndexByte(s, 0) >= 0:
			return nil, fmt.Errorf("request: %s contains NUL", what)
		case !utf8.ValidString(s):
			return nil, fmt.Errorf("request: %s is not valid UTF-8", what)
		}
		pkt = append(pkt, s...)
		pkt = append(pkt, 0)
	}
	return pkt, nil
}

// RequestBytes returns the size of the request packet of op and args, the
// size that max_request_bytes bounds on every front end.
func RequestBytes(op string, args []string) int {
	n := len(op) + 1
	for _, a := range args {
		n += len(a) + 1
	}
	return n
}

// EncodeResponse returns the response packet. A NUL in jobID or msg, which
// the format cannot carry, is replaced by a space, and invalid UTF-8 by
// U+FFFD, so that the packet always parses.
func EncodeResponse(ok bool, jobID, msg string) []byte {
	status := "error"
	if ok {
		status = "ok"
	}
	clean := func(s string) string {
		return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", " "), "\uFFFD")
	}
	return []byte(status + "\x00" + clean(jobID) + "\x00" + clean(msg))
}

// ParseResponse parses a response packet: exactly three strings, which a
// NUL may follow, the first "ok" or "error", all valid UTF-8, and a job id
// present when the status is "ok".
func ParseResponse(pkt []byte) (ok bool, jobID, msg string, err error) {
	if !utf8.Valid(pkt) {
		return false, "", "", errors.New("response: not valid UTF-8")
	}
	fields := strings.Split(string(pkt), "\x00")
	if len(fields) == 4 && fields[3] == "" {
		fields = fields[:3]
	}
	if len(fields) != 3 {
		return false, "", "", fmt.Errorf("response: %d strings, want 3 (status, job id, message)", len(fields))
	}
	switch fields[0] {
	case "ok":
		if fields[1] == "" {
			return false, "", "", errors.New(`response: status "ok" without a job id`)
		}
		ok = true
	case "error":
	default:
		return false, "", "", fmt.Errorf(`response: status %q is neither "ok" nor "error"`, fields[0])
	}
	return ok, fields[1], fields[2], nil
}
