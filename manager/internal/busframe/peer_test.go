package busframe

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/godbus/dbus/v5"
)

// peerPair returns a Stream past its authentication and the socket at
// its other end, as the manager's.
func peerPair(t testing.TB, keep KeepFunc) (*Stream, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return &Stream{conn: conn(fds[0]), keep: keep, begun: true}, conn(fds[1])
}

func signal(t *testing.T, serial uint32, path dbus.ObjectPath, iface, member string, body ...any) []byte {
	t.Helper()
	msg := &dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath:      dbus.MakeVariant(path),
		dbus.FieldInterface: dbus.MakeVariant(iface),
		dbus.FieldMember:    dbus.MakeVariant(member),
		dbus.FieldSender:    dbus.MakeVariant(":1.1"),
	}}
	if len(body) > 0 {
		msg.Body = body
		msg.Headers[dbus.FieldSignature] = dbus.MakeVariant(dbus.SignatureOf(body...))
	}
	var b bytes.Buffer
	if err := msg.EncodeTo(&b, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	binary.LittleEndian.PutUint32(data[8:12], serial) // EncodeTo leaves it 0
	return data
}

// TestPeerStreamKeeps writes, as the manager would and in pieces that cut
// messages anywhere, signals about a watched unit and another one, a
// method's reply, and a message of the other byte order: godbus decodes
// every message but the other unit's, whole and in order.
func TestPeerStreamKeeps(t *testing.T) {
	watched := dbus.ObjectPath("/org/freedesktop/systemd1/unit/a_2eservice")
	s, manager := peerPair(t, func(path dbus.ObjectPath, iface, member string) (bool, map[string]bool) {
		return path == watched || member == "JobRemoved", nil
	})
	props := map[string]dbus.Variant{"ActiveState": dbus.MakeVariant("active")}
	reply := &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldReplySerial: dbus.MakeVariant(uint32(7)),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(dbus.ObjectPath("/job/1"))),
	}, Body: []any{dbus.ObjectPath("/job/1")}}
	var r bytes.Buffer
	reply.EncodeTo(&r, binary.BigEndian)
	binary.BigEndian.PutUint32(r.Bytes()[8:12], 3)
	var stream []byte
	for _, m := range [][]byte{
		signal(t, 1, "/org/freedesktop/systemd1/unit/b_2eservice", propsIface, "PropertiesChanged", unitIface, props, []string{}),
		signal(t, 2, watched, propsIface, "PropertiesChanged", unitIface, props, []string{}),
		r.Bytes(),
		signal(t, 4, objectPath, managerIface, "UnitNew", "b.service", dbus.ObjectPath("/b")),
		signal(t, 5, objectPath, managerIface, "JobRemoved", uint32(1), dbus.ObjectPath("/job/1"), "a.service", "done"),
	} {
		stream = append(stream, m...)
	}
	go func() {
		for i := 0; i < len(stream); i += 37 {
			manager.Write(stream[i:min(i+37, len(stream))])
		}
		manager.Close()
	}()
	var got []uint32
	for {
		msg, err := dbus.DecodeMessage(s)
		if err != nil {
			break
		}
		got = append(got, msg.Serial())
		if msg.Serial() == 2 && msg.Body[0] != unitIface {
			t.Errorf("signal 2 decoded as %v", msg.Body)
		}
	}
	if want := []uint32{2, 3, 5}; !equalSerials(got, want) {
		t.Errorf("decoded serials %v, want %v", got, want)
	}
}

// TestPeerStreamSlims writes a service's PropertiesChanged that the keep
// function wants only ActiveState and ExecMainStatus of: godbus decodes
// those alone.
func TestPeerStreamSlims(t *testing.T) {
	s, manager := peerPair(t, func(dbus.ObjectPath, string, string) (bool, map[string]bool) {
		return true, map[string]bool{"ActiveState": true, "ExecMainStatus": true}
	})
	go func() {
		manager.Write(encodeSignal(t, binary.LittleEndian, serviceChange(), nil))
		manager.Close()
	}()
	msg, err := dbus.DecodeMessage(s)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := msg.Body[1].(map[string]dbus.Variant)
	if len(got) != 2 || got["ActiveState"].Value() != "active" || got["ExecMainStatus"].Value() != int32(3) {
		t.Errorf("decoded %v", got)
	}
}

func equalSerials(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPeerStreamFDs writes a message that declares unix fds and one that
// does not through SendFDs: the fds go with the first alone, and a message
// that never declares them is an error.
func TestPeerStreamFDs(t *testing.T) {
	s, manager := peerPair(t, nil)
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msg := fdMessage(t)
	plain := signal(t, 9, objectPath, managerIface, "Ping")
	err = s.SendFDs([]int{int(f.Fd())}, func() {
		s.Write(plain)
		s.Write(msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 4096), make([]byte, 256)
	var got int
	var fds []int
	for got < len(plain)+16 {
		n, oobn, _, _, err := manager.ReadMsgUnix(buf, oob)
		if err != nil {
			t.Fatal(err)
		}
		got += n
		if oobn > 0 {
			cmsgs, _ := syscall.ParseSocketControlMessage(oob[:oobn])
			for _, c := range cmsgs {
				rights, _ := syscall.ParseUnixRights(&c)
				fds = append(fds, rights...)
			}
		}
	}
	if len(fds) != 1 {
		t.Errorf("the manager received %d fds, want 1", len(fds))
	}
	for _, fd := range fds {
		syscall.Close(fd)
	}
	if err := s.SendFDs([]int{int(f.Fd())}, func() { s.Write(plain) }); err == nil {
		t.Error("SendFDs with no message declaring fds: no error")
	}
}

// FuzzReadHeader reads arbitrary bytes as a message's header: no panic,
// and a header read holds only what fits in it.
func FuzzReadHeader(f *testing.F) {
	var b bytes.Buffer
	(&dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath:      dbus.MakeVariant(objectPath),
		dbus.FieldInterface: dbus.MakeVariant(managerIface),
		dbus.FieldMember:    dbus.MakeVariant("JobRemoved"),
		dbus.FieldUnixFDs:   dbus.MakeVariant(uint32(2)),
	}}).EncodeTo(&b, binary.LittleEndian)
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 16 {
			return
		}
		h, ok := readHeader(data, binary.LittleEndian)
		if ok && len(h.path)+len(h.iface)+len(h.member) > len(data) {
			t.Fatalf("fields of %d bytes from %d", len(h.path)+len(h.iface)+len(h.member), len(data))
		}
		declaresFDs(data)
	})
}
