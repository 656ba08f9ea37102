package busframe

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// hello is what Dial sends to authenticate, in one write, as sd-bus (so
// systemctl and systemd-run) does: the NUL byte, the EXTERNAL mechanism
// with no identity of its own (the server reads the peer's credentials
// off the socket), the empty answer to the server's DATA, the request
// for unix fds and BEGIN. godbus asks for the server's mechanisms first
// and sends each line after the answer to the one before: four round
// trips where this takes one.
const hello = "\x00AUTH EXTERNAL\r\nDATA\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n"

// authenticate sends hello and reads the server's three answers, one to
// each line but BEGIN: to AUTH, the DATA that asks for the answer sent
// already (or at once the OK); to DATA, the OK with the server's GUID
// (or an ERROR, if the OK came already); to NEGOTIATE_UNIX_FD, the
// agreement to pass unix fds. What follows them is kept for Read.
func (s *Stream) authenticate() error {
	if _, err := s.conn.Write([]byte(hello)); err != nil {
		return fmt.Errorf("authenticate: %w", err)
	}
	var got []byte
	b := make([]byte, 256)
	for answer := 0; answer < 3; {
		i := bytes.Index(got, []byte("\r\n"))
		if i < 0 {
			n, err := s.conn.Read(b)
			if err != nil {
				return fmt.Errorf("authenticate: %w", err)
			}
			got = append(got, b[:n]...)
			continue
		}
		line := string(got[:i])
		got = got[i+2:]
		word, arg, _ := strings.Cut(line, " ")
		switch {
		case word == "REJECTED":
			return errors.New("authenticate: the server rejected the caller's credentials")
		case answer < 2 && word == "OK" && s.guid == "":
			s.guid = arg
		case answer == 0 && word == "DATA", answer == 1 && word == "ERROR" && s.guid != "":
		case answer == 2 && word == "AGREE_UNIX_FD" && s.guid != "":
		default:
			return fmt.Errorf("authenticate: unexpected answer %q", line)
		}
		answer++
	}
	// A manager sends its signals to a client of its private socket from
	// BEGIN on, unasked: what came behind the answers is the start of the
	// messages.
	s.in = append(make([]byte, 0, readBlock), got...)
	return nil
}

// answer answers a line of godbus's own authentication, which comes
// through the Stream once Dial has authenticated: the answers that the
// server gave Dial, in the order godbus asks for them. After BEGIN the
// Stream carries godbus's messages.
func (s *Stream) answer(line string) {
	switch word, _, _ := strings.Cut(strings.TrimPrefix(line, "\x00"), " "); word {
	case "AUTH":
		if line == "AUTH" || line == "\x00AUTH" {
			s.answers = append(s.answers, "REJECTED EXTERNAL\r\n"...)
		} else {
			s.answers = append(s.answers, "DATA\r\n"...)
		}
	case "DATA":
		s.answers = append(s.answers, "OK "+s.guid+"\r\n"...)
	case "BEGIN":
		s.begun = true
	default:
		s.answers = append(s.answers, "ERROR\r\n"...)
	}
}
