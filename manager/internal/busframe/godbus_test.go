package busframe

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// TestGodbusBytes drives godbus's own authentication and message writes
// through a Stream that Dial authenticated, with a manager's end of the
// socket that speaks the protocol as systemd does, and fails if a godbus
// upgrade changes what the Stream relies on: that godbus authenticates
// with the lines the Stream answers (none of them reaches the socket),
// writes messages framed by their headers' lengths with a unix_fds field
// for UnixFDIndex values, and reads every message the Stream frames
// (systemd's real signals).
func TestGodbusBytes(t *testing.T) {
	s, manager := dialPair(t, keepAll, systemdAnswers)
	bus, signals := authenticated(t, s)

	// Two calls, the second with an fd, go as two messages, framed by
	// their headers, the fd with the second.
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	obj := bus.Object("org.freedesktop.systemd1", objectPath)
	obj.Go(managerIface+".Subscribe", dbus.FlagNoReplyExpected, nil)
	call := &dbus.Message{Type: dbus.TypeMethodCall, Flags: dbus.FlagNoReplyExpected, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath:      dbus.MakeVariant(objectPath),
		dbus.FieldInterface: dbus.MakeVariant(managerIface),
		dbus.FieldMember:    dbus.MakeVariant("StartTransientUnit"),
		dbus.FieldSignature: dbus.MakeVariant(dbus.SignatureOf(dbus.UnixFDIndex(0))),
		dbus.FieldUnixFDs:   dbus.MakeVariant(uint32(1)),
	}, Body: []any{dbus.UnixFDIndex(0)}}
	if err := s.SendFDs([]int{int(f.Fd())}, func() { bus.SendWithContext(context.Background(), call, make(chan *dbus.Call, 1)) }); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		member string
		fds    int
	}{{"Subscribe", 0}, {"StartTransientUnit", 1}} {
		raw, fds := readMessage(t, manager)
		msg, err := dbus.DecodeMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("message %d, framed by its header: %v", i, err)
		}
		if member, _ := msg.Headers[dbus.FieldMember].Value().(string); member != want.member || fds != want.fds {
			t.Errorf("message %d: %s with %d fds, want %s with %d", i, member, fds, want.member, want.fds)
		}
	}

	// systemd's real stream: godbus receives each of its 42 signals.
	stream := captured(t, "systemd252-received.bin")
	go writeCut(manager, stream, []byte{100})
	for i := range 42 {
		select {
		case <-signals:
		case <-time.After(10 * time.Second):
			t.Fatalf("godbus received %d of the 42 signals systemd sent", i)
		}
	}
}

// authenticated returns a godbus connection on s, authenticated through
// it, and the channel of the signals it receives.
func authenticated(t *testing.T, s *Stream) (*dbus.Conn, chan *dbus.Signal) {
	t.Helper()
	signals := make(chan *dbus.Signal, 100)
	bus, err := dbus.NewConn(s, dbus.WithSignalHandler(dbus.NewSequentialSignalHandler()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	bus.Signal(signals)
	if err := bus.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		t.Fatal(err)
	}
	return bus, signals
}

// systemdAnswers is what systemd 252's user manager answered sd-bus's
// authentication with (captured on its private socket; dbus-daemon
// answers alike), unix fds agreed.
const systemdAnswers = "DATA\r\nOK c0b06556b10448dca1cfa19fcf9e0059\r\nAGREE_UNIX_FD\r\n"

// dialPair returns a Stream that Dial authenticated and the socket at its
// other end, as the manager's, which answered the authentication with
// answers. It fails the test unless the authentication came as sd-bus
// sends it, whole in one write.
func dialPair(t *testing.T, keep KeepFunc, answers string) (*Stream, *net.UnixConn) {
	t.Helper()
	path := t.TempDir() + "/private"
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *net.UnixConn, 1)
	go func() {
		conn, err := l.AcceptUnix()
		if err != nil {
			accepted <- nil
			return
		}
		b := make([]byte, 256)
		n, _ := conn.Read(b)
		if string(b[:n]) != hello {
			t.Errorf("the server's first read: %q, want the whole authentication %q", b[:n], hello)
		}
		conn.Write([]byte(answers))
		accepted <- conn
	}()
	s, err := Dial(path, keep)
	manager := <-accepted
	if manager == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { manager.Close() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, manager
}

// A server that accepts the credentials at AUTH, without asking for
// them, answers the DATA that follows with an ERROR: Dial goes on, and
// godbus authenticates through the Stream.
func TestDialOKAtOnce(t *testing.T) {
	s, _ := dialPair(t, keepAll, "OK c0b06556b10448dca1cfa19fcf9e0059\r\nERROR\r\nAGREE_UNIX_FD\r\n")
	authenticated(t, s)
}

// A server that rejects the caller's credentials, or refuses unix fds,
// fails Dial with an error that says so.
func TestDialRefused(t *testing.T) {
	for _, answers := range []string{"REJECTED EXTERNAL\r\n", "DATA\r\nOK c0b0\r\nERROR\r\n"} {
		path := t.TempDir() + "/private"
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			conn, err := l.AcceptUnix()
			if err != nil {
				return
			}
			conn.Read(make([]byte, 256))
			conn.Write([]byte(answers))
			conn.Close()
		}()
		s, err := Dial(path, keepAll)
		l.Close()
		if err == nil {
			s.Close()
			t.Fatalf("Dial answered %q: no error", answers)
		}
		if !strings.Contains(err.Error(), "authenticate") {
			t.Errorf("Dial answered %q: %v, not an authentication error", answers, err)
		}
	}
}

// readMessage reads one message from conn, framed by its header's
// lengths, and the number of unix fds that came with it.
func readMessage(t *testing.T, conn *net.UnixConn) ([]byte, int) {
	t.Helper()
	msg, fds := readFull(t, conn, 16)
	n, _, err := messageLen(msg)
	if err != nil {
		t.Fatal(err)
	}
	rest, more := readFull(t, conn, n-16)
	return append(msg, rest...), fds + more
}

// readFull reads n bytes from conn, and the number of unix fds that came
// with them (closing them).
func readFull(t testing.TB, conn *net.UnixConn, n int) ([]byte, int) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf, oob := make([]byte, n), make([]byte, 256)
	fds := 0
	for got := 0; got < n; {
		m, oobn, _, _, err := conn.ReadMsgUnix(buf[got:], oob)
		if err != nil {
			t.Fatal(err)
		}
		got += m
		cmsgs, _ := syscall.ParseSocketControlMessage(oob[:oobn])
		for _, c := range cmsgs {
			rights, _ := syscall.ParseUnixRights(&c)
			for _, fd := range rights {
				syscall.Close(fd)
			}
			fds += len(rights)
		}
	}
	return buf, fds
}

// A manager sends its signals to a client of its private socket from
// BEGIN on, unasked, so a signal can come in the same read as the answers
// to the authentication: godbus receives it.
func TestDialKeepsWhatFollows(t *testing.T) {
	sig := signal(t, 1, "/org/freedesktop/systemd1/unit/a_2eservice", propsIface, "PropertiesChanged",
		unitIface, map[string]dbus.Variant{"ActiveState": dbus.MakeVariant("active")}, []string{})
	s, _ := dialPair(t, keepAll, systemdAnswers+string(sig))
	_, signals := authenticated(t, s)
	select {
	case got := <-signals:
		if got.Name != propsIface+".PropertiesChanged" {
			t.Errorf("godbus received %s, want the PropertiesChanged sent behind the answers", got.Name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("godbus did not receive the signal sent behind the answers")
	}
}
