package busframe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/godbus/dbus/v5"
)

// Stream is the stream a connection's godbus reads and writes instead of
// the socket: it authenticates in one round trip (Dial), reads the socket
// in blocks, frames the messages and leaves out, from their headers
// alone, the signals no Watch waits for. It also passes unix fds, which
// godbus's stream transport cannot: SendFDs attaches them to the one
// message that declares them.
//
// A manager sends every signal about every unit to each client of its
// private socket: no bus daemon filters them by match rules. godbus reads
// each message in three system calls and decodes its body in full before
// the signal router can drop it, which for the start of a pod of 100 apps
// cost its client 90 to 130 ms of CPU (about 2,400 messages) where
// systemctl spent 10 to 20 (docs/performance.md).
type Stream struct {
	conn *net.UnixConn
	// keep reports whether a signal from path, of iface and member, is to
	// reach godbus, and, for a PropertiesChanged, the only properties it
	// needs (nil: all; see slimProps); methods' replies and errors always
	// reach it.
	keep KeepFunc

	in     []byte // read from the socket, not yet framed
	out    []byte // framed messages kept; godbus has read them up to outPos
	outPos int
	// begun says godbus's authentication is over: frame what follows.
	// Write sets it with godbus's BEGIN, before godbus starts the
	// goroutine that reads messages.
	begun bool
	// guid is the server's, from Dial's authentication; answers holds
	// the answers to godbus's authentication that it has not read.
	guid    string
	answers []byte

	fdmu sync.Mutex // held by SendFDs throughout
	wmu  sync.Mutex
	fds  []int // for the next message written that declares unix fds
	// pending holds what godbus wrote of a line (while it authenticates)
	// or of a message that is not whole yet.
	pending []byte
}

// A KeepFunc is Stream's filter of signals (see Stream.keep).
type KeepFunc func(path dbus.ObjectPath, iface, member string) (keep bool, props map[string]bool)

// Dial connects to the socket at path, a manager's private socket or a
// bus, and authenticates on it in one round trip, unix fds agreed (see
// hello). godbus then authenticates through the Stream it returns, which
// answers it itself (see Write).
func Dial(path string, keep KeepFunc) (*Stream, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	s := &Stream{conn: conn, keep: keep}
	if err := s.authenticate(); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// readBlock is the size of Stream's first read buffer: a few of the
// manager's signals (each under 2 KB). It doubles for a longer message.
const readBlock = 8 << 10

// maxMessage is the D-Bus limit on a message's length.
const maxMessage = 1 << 27

// Read returns the bytes of the kept messages, whole messages at a time,
// once godbus's authentication is over, and the answers to its lines
// before.
func (s *Stream) Read(p []byte) (int, error) {
	if !s.begun {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		if len(s.answers) == 0 {
			return 0, errors.New("busframe: godbus read before it wrote a line to answer")
		}
		n := copy(p, s.answers)
		s.answers = s.answers[n:]
		return n, nil
	}
	if s.outPos == len(s.out) {
		s.out, s.outPos = s.out[:0], 0
	}
	for len(s.out) == 0 {
		if err := s.frame(); err != nil {
			return 0, err
		}
		if len(s.out) > 0 {
			break
		}
		if len(s.in) == cap(s.in) { // a message longer than the buffer
			s.in = append(s.in, make([]byte, max(readBlock, len(s.in)))...)[:len(s.in)]
		}
		n, err := s.conn.Read(s.in[len(s.in):cap(s.in)])
		s.in = s.in[:len(s.in)+n]
		if n == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(p, s.out[s.outPos:])
	s.outPos += n
	return n, nil
}

// frame moves each complete message at the start of s.in to s.out, or
// drops it, and keeps a partial one for the next read.
func (s *Stream) frame() error {
	rest := s.in
	for {
		n, order, err := messageLen(rest)
		if err != nil {
			return err
		}
		if n == 0 || len(rest) < n {
			break
		}
		if msg, ok := s.wanted(rest[:n], order); ok {
			s.out = append(s.out, msg...)
		}
		rest = rest[n:]
	}
	s.in = s.in[:copy(s.in, rest)]
	return nil
}

// messageLen returns the length of the message that b starts with, from
// its header's fixed part: the byte order, the body's length and the
// header fields' length (the D-Bus specification's framing). It returns 0
// while b is shorter than that fixed part, and an error for a byte order
// that is neither or a message longer than D-Bus allows.
func messageLen(b []byte) (int, binary.ByteOrder, error) {
	if len(b) < 16 {
		return 0, nil, nil
	}
	order, err := byteOrder(b[0])
	if err != nil {
		return 0, nil, err
	}
	hlen, blen := int(order.Uint32(b[12:16])), int(order.Uint32(b[4:8]))
	if hlen > maxMessage || blen > maxMessage {
		return 0, nil, dbus.InvalidMessageError("message is too long")
	}
	n := 16 + (hlen+7)&^7 + blen
	if n > maxMessage {
		return 0, nil, dbus.InvalidMessageError("message is too long")
	}
	return n, order, nil
}

func byteOrder(b byte) (binary.ByteOrder, error) {
	switch b {
	case 'l':
		return binary.LittleEndian, nil
	case 'B':
		return binary.BigEndian, nil
	}
	return nil, dbus.InvalidMessageError("invalid byte order")
}

// wanted reports whether godbus is to get msg, and returns what it is to
// get of it: anything but a signal, a signal the keep function asks for
// (a PropertiesChanged with only the properties it names), and a message
// whose header it cannot read (godbus then reports what is wrong with it).
func (s *Stream) wanted(msg []byte, order binary.ByteOrder) ([]byte, bool) {
	if dbus.Type(msg[1]) != dbus.TypeSignal {
		return msg, true
	}
	h, ok := readHeader(msg, order)
	if !ok {
		return msg, true
	}
	keep, props := s.keep(dbus.ObjectPath(h.path), h.iface, h.member)
	if keep && props != nil && h.member == "PropertiesChanged" && h.sig == "sa{sv}as" {
		msg = slimProps(msg, order, props)
	}
	return msg, keep
}

// header holds what Stream reads of a message's header.
type header struct {
	path, iface, member string
	sig                 string // the body's signature
	fds                 bool   // it has a unix_fds field
}

// readHeader returns the header of msg, which holds at least the whole
// header, or false if the header is malformed.
func readHeader(msg []byte, order binary.ByteOrder) (h header, ok bool) {
	end := 16 + int(order.Uint32(msg[12:16]))
	if end > len(msg) {
		return h, false
	}
	r := reader{b: msg[:end], order: order, off: 16}
	for r.off < end {
		r.align(8) // each field is a struct, aligned to 8
		i := r.off
		if i+4 > end || msg[i+1] != 1 || msg[i+3] != 0 {
			return h, false // a field code, a one-type signature
		}
		code, sig := dbus.HeaderField(msg[i]), msg[i+2]
		r.off += 4
		switch sig {
		case 's', 'o':
			v, ok := r.str()
			if !ok {
				return h, false
			}
			switch code {
			case dbus.FieldPath:
				h.path = v
			case dbus.FieldInterface:
				h.iface = v
			case dbus.FieldMember:
				h.member = v
			}
		case 'g':
			v, ok := r.sig()
			if !ok {
				return h, false
			}
			if code == dbus.FieldSignature {
				h.sig = v
			}
		case 'u':
			if _, ok := r.u32(); !ok {
				return h, false
			}
			h.fds = h.fds || code == dbus.FieldUnixFDs
		default:
			return h, false
		}
	}
	return h, true
}

// Write takes what godbus writes, frames it as the stream's reader does
// and handles each whole line or message, however godbus cuts its
// writes: while godbus authenticates, each line of the protocol is
// answered from what the server answered Dial (Read returns the
// answers), as the server would answer it; after its BEGIN, each message
// is sent whole, with the unix fds of SendFDs if it declares some. A part
// of a line or message waits for the rest.
func (s *Stream) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b := p
	if len(s.pending) > 0 {
		s.pending = append(s.pending, p...)
		b = s.pending
	}
	rest, err := s.send(b)
	if err != nil {
		s.pending = s.pending[:0]
		return 0, err
	}
	// rest is the tail of b, so of p or of s.pending; copy moves it within.
	if len(rest) > 0 || len(s.pending) > 0 {
		s.pending = append(s.pending[:0], rest...)
	}
	return len(p), nil
}

// send sends the whole lines and messages at the start of b, and returns
// the part of one that follows them.
func (s *Stream) send(b []byte) ([]byte, error) {
	for !s.begun {
		i := bytes.Index(b, []byte("\r\n"))
		if i < 0 {
			return b, nil
		}
		s.answer(string(b[:i]))
		b = b[i+2:]
	}
	for {
		n, _, err := messageLen(b)
		if err != nil {
			return nil, err
		}
		if n == 0 || len(b) < n {
			return b, nil
		}
		if err := s.sendMessage(b[:n]); err != nil {
			return nil, err
		}
		b = b[n:]
	}
}

// sendMessage writes the whole message msg, with the fds of SendFDs if it
// is the message that declares them.
func (s *Stream) sendMessage(msg []byte) error {
	if s.fds == nil || !declaresFDs(msg) {
		_, err := s.conn.Write(msg)
		return err
	}
	n, _, err := s.conn.WriteMsgUnix(msg, syscall.UnixRights(s.fds...), nil)
	s.fds = nil
	if err == nil && n < len(msg) {
		_, err = s.conn.Write(msg[n:])
	}
	return err
}

// declaresFDs reports whether the encoded message p has a unix_fds field.
func declaresFDs(p []byte) bool {
	if len(p) < 16 {
		return false
	}
	order, err := byteOrder(p[0])
	if err != nil {
		return false
	}
	h, ok := readHeader(p, order)
	return ok && h.fds
}

// SendFDs calls send, which must write a message that declares unix fds,
// and has that message carry fds. It reports an error if no such message
// was written.
func (s *Stream) SendFDs(fds []int, send func()) error {
	s.fdmu.Lock()
	defer s.fdmu.Unlock()
	s.wmu.Lock()
	s.fds = fds
	s.wmu.Unlock()
	send()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.fds != nil {
		s.fds = nil
		return errors.New("manager: the message with unix fds was not written")
	}
	return nil
}

func (s *Stream) Close() error { return s.conn.Close() }

// SyscallConn returns the socket's raw connection (for its peer's
// credentials).
func (s *Stream) SyscallConn() (syscall.RawConn, error) { return s.conn.SyscallConn() }
