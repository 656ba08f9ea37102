package busframe

import (
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// TestGodbusBytes drives godbus's own authentication and message writes
// through a Stream, with a manager's end of the socket that speaks the
// protocol as systemd does, and fails if a godbus upgrade changes what
// the Stream relies on: that godbus starts with the NUL byte and ends its
// authentication with the line BEGIN, never negotiates unix fds itself on
// a stream (the Stream does, before BEGIN), writes messages framed by
// their headers' lengths with a unix_fds field for UnixFDIndex values, and
// reads every message the Stream frames (systemd's real signals).
func TestGodbusBytes(t *testing.T) {
	s, manager := peerPair(t, keepAll)
	s.begun = false
	signals := make(chan *dbus.Signal, 100)
	bus, err := dbus.NewConn(s, dbus.WithSignalHandler(dbus.NewSequentialSignalHandler()))
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	bus.Signal(signals)
	uid := strconv.Itoa(os.Getuid())
	wantAuth := "\x00AUTH\r\nAUTH EXTERNAL\r\nDATA\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n"
	authed := make(chan string, 1)
	go func() { authed <- answerAuth(manager) }()
	if err := bus.Auth([]dbus.Auth{dbus.AuthExternal(uid)}); err != nil {
		t.Fatal(err)
	}
	if got := <-authed; got != wantAuth {
		t.Fatalf("godbus authenticated with %q, want %q", got, wantAuth)
	}

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

// answerAuth answers, on the manager's end of the socket, the
// authentication of a client with the lines systemd 252's user manager
// answered godbus with (captured on its private socket), unix fds agreed,
// and returns all the client wrote up to and with its BEGIN.
func answerAuth(conn *net.UnixConn) string {
	var got []byte
	b := make([]byte, 1)
	for !bytes.HasSuffix(got, []byte("BEGIN\r\n")) {
		if _, err := conn.Read(b); err != nil {
			return string(got)
		}
		got = append(got, b[0])
		if b[0] != '\n' {
			continue
		}
		line := got[bytes.LastIndexByte(got[:len(got)-1], '\n')+1:]
		switch {
		case string(bytes.TrimPrefix(line, []byte{0})) == "AUTH\r\n":
			conn.Write([]byte("REJECTED EXTERNAL ANONYMOUS\r\n"))
		case string(line) == "AUTH EXTERNAL\r\n":
			conn.Write([]byte("DATA\r\n"))
		case string(line) == "DATA\r\n":
			conn.Write([]byte("OK c0b06556b10448dca1cfa19fcf9e0059\r\n"))
		case string(line) == "NEGOTIATE_UNIX_FD\r\n":
			conn.Write([]byte("AGREE_UNIX_FD\r\n"))
		}
	}
	return string(got)
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
