// Package journallog is a log/slog handler that writes each record to the
// systemd journal over its native protocol: a datagram of fields on the
// journal's unix socket, so that the record's attributes arrive as fields
// journalctl can match on (journalctl JOB_ID=...), not as text.
package journallog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultSocket is where journald receives native-protocol datagrams.
const DefaultSocket = "/run/systemd/journal/socket"

// Options configure a Handler.
type Options struct {
	// Level is the minimum level logged; nil logs Info and above.
	Level slog.Leveler
	// Identifier is the SYSLOG_IDENTIFIER= of every entry, when set.
	Identifier string
	// Fallback, when set, gets each record the journal socket refuses
	// (journald stopped, or restarting), with the same attributes and
	// groups, so that it is not lost.
	Fallback slog.Handler
}

// Handler writes records to the journal socket it was made for. Each
// record becomes one entry with MESSAGE= (the record's message), PRIORITY=
// (syslog level: debug 7, info 6, warn 4, error 3), SYSLOG_IDENTIFIER= when
// set, and one field per attribute: its key, with the groups before it
// joined by "_", upper-cased, and every character other than A-Z, 0-9 and
// "_" made "_" (so "job_id" is JOB_ID=). An attribute whose key leaves no
// valid field name (empty, or starting with "_" or a digit) is dropped; the
// journal reserves names starting with "_" for itself. An entry too large
// for a datagram goes in a sealed memfd passed over the socket, as
// journald accepts.
type Handler struct {
	s     *sender
	opts  Options
	attrs []byte // encoded fields of WithAttrs
	group string // field name prefix of WithGroup, "" or ending in "_"
}

// sender is the socket shared by a Handler and those derived from it.
type sender struct {
	mu   sync.Mutex
	conn *net.UnixConn
	addr *net.UnixAddr
}

// New returns a Handler that sends to the journal socket at path (such as
// DefaultSocket). It fails when no datagram socket can be opened; a
// journal that is not there shows as errors from Handle.
func New(path string, opts Options) (*Handler, error) {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Handler{s: &sender{conn: conn, addr: &net.UnixAddr{Name: path, Net: "unixgram"}}, opts: opts}, nil
}

// Enabled reports whether level is at least the handler's Level.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	lowest := slog.LevelInfo
	if h.opts.Level != nil {
		lowest = h.opts.Level.Level()
	}
	return level >= lowest
}

// Handle sends the record as one journal entry, or to the Fallback
// handler when the socket refuses it.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	var b bytes.Buffer
	appendField(&b, "MESSAGE", r.Message)
	appendField(&b, "PRIORITY", fmt.Sprint(priority(r.Level)))
	if h.opts.Identifier != "" {
		appendField(&b, "SYSLOG_IDENTIFIER", h.opts.Identifier)
	}
	b.Write(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	err := h.s.send(b.Bytes())
	if err != nil && h.opts.Fallback != nil {
		return errors.Join(err, h.opts.Fallback.Handle(ctx, r))
	}
	return err
}

// WithAttrs returns a handler that adds attrs to every entry.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b bytes.Buffer
	for _, a := range attrs {
		appendAttr(&b, h.group, a)
	}
	c := *h
	c.attrs = append(append([]byte(nil), h.attrs...), b.Bytes()...)
	if h.opts.Fallback != nil {
		c.opts.Fallback = h.opts.Fallback.WithAttrs(attrs)
	}
	return &c
}

// WithGroup returns a handler whose later attributes' field names start
// with name and "_".
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "_"
	if h.opts.Fallback != nil {
		c.opts.Fallback = h.opts.Fallback.WithGroup(name)
	}
	return &c
}

// priority maps a slog level to a syslog priority.
func priority(l slog.Level) int {
	switch {
	case l < slog.LevelInfo:
		return 7 // debug
	case l < slog.LevelWarn:
		return 6 // info
	case l < slog.LevelError:
		return 4 // warning
	}
	return 3 // err
}

// appendAttr encodes attribute a, a group's attributes one by one.
func appendAttr(b *bytes.Buffer, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "_"
		}
		for _, g := range v.Group() {
			appendAttr(b, prefix, g)
		}
		return
	}
	if name := FieldName(prefix + a.Key); name != "" {
		appendField(b, name, v.String())
	}
}

// FieldName returns key as a journal field name: upper-cased, characters
// other than A-Z, 0-9 and "_" made "_", at most 64 bytes; "" when the
// result is empty or starts with "_" or a digit.
func FieldName(key string) string {
	name := []byte(strings.ToUpper(key))
	for i, c := range name {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			name[i] = '_'
		}
	}
	if len(name) > 64 {
		name = name[:64]
	}
	if len(name) == 0 || name[0] == '_' || name[0] >= '0' && name[0] <= '9' {
		return ""
	}
	return string(name)
}

// appendField encodes one field: "NAME=value\n", or, for a value holding a
// newline, "NAME\n", its length as 64-bit little endian, the value and
// "\n".
func appendField(b *bytes.Buffer, name, value string) {
	if !strings.Contains(value, "\n") {
		b.WriteString(name + "=" + value + "\n")
		return
	}
	b.WriteString(name + "\n")
	binary.Write(b, binary.LittleEndian, uint64(len(value)))
	b.WriteString(value + "\n")
}

// send writes the entry as a datagram or, when it is too large for one,
// as a sealed memfd.
func (s *sender) send(entry []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, err := s.conn.WriteMsgUnix(entry, nil, s.addr)
	if errors.Is(err, syscall.EMSGSIZE) || errors.Is(err, syscall.ENOBUFS) {
		err = s.sendMemfd(entry)
	}
	if err != nil {
		return fmt.Errorf("journal %s: %w", s.addr.Name, err)
	}
	return nil
}

func (s *sender) sendMemfd(entry []byte) error {
	fd, err := unix.MemfdCreate("journal-entry", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "journal-entry")
	defer f.Close()
	if _, err := f.Write(entry); err != nil {
		return err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return err
	}
	_, _, err = s.conn.WriteMsgUnix(nil, unix.UnixRights(int(f.Fd())), s.addr)
	return err
}
