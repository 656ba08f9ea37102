package busframe

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"slices"
	"testing"

	"github.com/godbus/dbus/v5"
)

// Captured streams, in testdata: what systemd 252's user manager sent a
// client that subscribed and started a transient service on its private
// socket (45 messages: 3 replies, 42 signals), and the three method calls
// godbus wrote for it, both from after the BEGIN line.
func captured(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// splitMessages cuts stream at the lengths in its messages' headers.
func splitMessages(t testing.TB, stream []byte) [][]byte {
	t.Helper()
	var msgs [][]byte
	for len(stream) > 0 {
		n, _, err := messageLen(stream)
		if err != nil || n == 0 || n > len(stream) {
			t.Fatalf("the captured stream does not end at a message's end (%d bytes left, %v)", len(stream), err)
		}
		msgs, stream = append(msgs, stream[:n]), stream[n:]
	}
	return msgs
}

func keepAll(dbus.ObjectPath, string, string) (bool, map[string]bool) { return true, nil }

// readThrough writes stream into a Stream's socket in pieces whose lengths
// cycle through cuts, and returns what the Stream's reader reads until the
// end or an error.
func readThrough(t testing.TB, stream, cuts []byte, keep KeepFunc) ([]byte, error) {
	s, manager := peerPair(t, keep)
	go func() {
		writeCut(manager, stream, cuts)
		manager.Close()
	}()
	got, err := io.ReadAll(s)
	return got, err
}

// writeCut writes b to w in pieces whose lengths cycle through cuts (each
// at least 1); with no cuts, in one write.
func writeCut(w io.Writer, b, cuts []byte) error {
	for i := 0; len(b) > 0; i++ {
		n := len(b)
		if len(cuts) > 0 {
			n = min(int(cuts[i%len(cuts)])+1, len(b))
		}
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// The manager's real stream, cut anywhere by the socket, reaches godbus
// as the messages systemd sent, each decoded whole and in order.
func TestReadCapturedStream(t *testing.T) {
	stream := captured(t, "systemd252-received.bin")
	want := splitMessages(t, stream)
	for _, cuts := range [][]byte{nil, {0}, {2}, {6}, {15}, {16}, {36, 200, 3}, {255}} {
		s, manager := peerPair(t, keepAll)
		go func() {
			writeCut(manager, stream, cuts)
			manager.Close()
		}()
		for i, w := range want {
			msg, err := dbus.DecodeMessage(s)
			if err != nil {
				t.Fatalf("cuts %v: message %d: %v", cuts, i, err)
			}
			ref, _ := dbus.DecodeMessage(bytes.NewReader(w))
			if msg.Serial() != ref.Serial() || msg.Type != ref.Type || len(msg.Body) != len(ref.Body) {
				t.Fatalf("cuts %v: message %d decoded as %v, want %v", cuts, i, msg, ref)
			}
		}
		if _, err := dbus.DecodeMessage(s); err == nil {
			t.Fatalf("cuts %v: a message after the %d sent", cuts, len(want))
		}
	}
}

// FuzzFrameRead writes a stream to a Stream's socket cut at arbitrary
// points: its reader hands on what framing the whole stream at once hands
// on (the whole of it, or a prefix when the stream breaks the framing),
// whatever the cuts, and never panics. The seeds are systemd's real
// messages.
func FuzzFrameRead(f *testing.F) {
	stream := captured(f, "systemd252-received.bin")
	f.Add(stream, []byte{7, 100, 1})
	for _, m := range splitMessages(f, stream) {
		f.Add(m, []byte{15})
	}
	f.Add(stream[:1000], []byte{0})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		if len(stream) > 1<<16 {
			return
		}
		keep := func(path dbus.ObjectPath, iface, member string) (bool, map[string]bool) {
			return len(path)%3 != 0, map[string]bool{"ActiveState": true, "Result": true}
		}
		whole := &Stream{keep: keep, in: append([]byte(nil), stream...)}
		wholeErr := whole.frame()
		got, err := readThrough(t, stream, cuts, keep)
		if !bytes.HasPrefix(whole.out, got) {
			t.Fatalf("read %d bytes that framing the whole stream does not begin with", len(got))
		}
		if wholeErr == nil && (err != nil || !bytes.Equal(got, whole.out)) {
			t.Fatalf("read %d bytes (%v), framing the whole stream %d", len(got), err, len(whole.out))
		}
	})
}

// writePair returns a Stream not yet authenticated and its socket's other
// end, as the manager's, which agrees to pass unix fds when asked and
// collects all it receives in the returned function's answer.
func writePair(t testing.TB) (*Stream, func() []byte) {
	t.Helper()
	s, manager := peerPair(t, keepAll)
	s.begun = false
	done := make(chan []byte, 1)
	go func() {
		var got []byte
		buf := make([]byte, 4096)
		authing := true
		for {
			n, err := manager.Read(buf)
			got = append(got, buf[:n]...)
			if authing && bytes.HasSuffix(got, []byte("NEGOTIATE_UNIX_FD\r\n")) {
				manager.Write([]byte("AGREE_UNIX_FD\r\n"))
			}
			authing = authing && !bytes.Contains(got, []byte("BEGIN\r\n"))
			if err != nil {
				done <- got
				return
			}
		}
	}()
	return s, func() []byte {
		s.conn.CloseWrite()
		return <-done
	}
}

// authLines is what godbus wrote to authenticate with systemd 252's user
// manager on its private socket (see godbus_test.go).
const authLines = "\x00AUTH\r\nAUTH EXTERNAL\r\nDATA\r\nBEGIN\r\n"

// FuzzFrameWrite writes a stream to a Stream cut at arbitrary points, as
// godbus might cut its writes: the manager receives what the same stream
// written at once sends, whatever the cuts. The seeds are godbus's real
// authentication and method calls.
func FuzzFrameWrite(f *testing.F) {
	sent := captured(f, "godbus-sent.bin")
	f.Add(append([]byte(authLines), sent...), []byte{3, 0, 40})
	f.Add(append([]byte(authLines), sent...), []byte{0})
	f.Add([]byte(authLines), []byte{5})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		if len(stream) > 1<<16 {
			return
		}
		s, received := writePair(t)
		wholeErr := writeCut(s, stream, nil)
		whole := received()
		s, received = writePair(t)
		err := writeCut(s, stream, cuts)
		got := received()
		if (err == nil) != (wholeErr == nil) || !bytes.Equal(got, whole) {
			t.Fatalf("cut writes sent %q (%v), one write %q (%v)", got, err, whole, wholeErr)
		}
	})
}

// The fds of SendFDs go with the message that declares them when godbus's
// write of it comes in pieces.
func TestWriteFDsInPieces(t *testing.T) {
	s, manager := peerPair(t, nil)
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sent := splitMessages(t, captured(t, "godbus-sent.bin"))
	withFDs := fdMessage(t)
	stream := append(append(append([]byte(nil), sent[0]...), withFDs...), sent[1]...)
	if err := s.SendFDs([]int{int(f.Fd())}, func() { writeCut(s, stream, []byte{4, 30}) }); err != nil {
		t.Fatal(err)
	}
	got, fds := receive(t, manager, len(sent[0]), len(withFDs), len(sent[1]))
	if !bytes.Equal(got, stream) {
		t.Errorf("the manager received %d bytes, not the %d written", len(got), len(stream))
	}
	if want := []int{0, 1, 0}; !slices.Equal(fds, want) {
		t.Errorf("unix fds received with each message: %v, want %v", fds, want)
	}
}

// fdMessage is a method call that declares one unix fd.
func fdMessage(t testing.TB) []byte {
	var b bytes.Buffer
	msg := &dbus.Message{Type: dbus.TypeMethodCall, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath:      dbus.MakeVariant(objectPath),
		dbus.FieldMember:    dbus.MakeVariant("StartTransientUnit"),
		dbus.FieldUnixFDs:   dbus.MakeVariant(uint32(1)),
		dbus.FieldSignature: dbus.MakeVariant(dbus.SignatureOf(dbus.UnixFDIndex(0))),
	}, Body: []any{dbus.UnixFDIndex(0)}}
	if err := msg.EncodeTo(&b, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// receive reads from conn messages of the given sizes, and returns their
// bytes and the number of unix fds that came with each (see readFull): it
// never reads across the end of a message, so an fd comes with the
// message whose bytes the sender's sendmsg began with.
func receive(t testing.TB, conn *net.UnixConn, sizes ...int) (got []byte, fds []int) {
	for _, size := range sizes {
		b, n := readFull(t, conn, size)
		got, fds = append(got, b...), append(fds, n)
	}
	return got, fds
}
