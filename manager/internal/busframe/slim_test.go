package busframe

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/godbus/dbus/v5"
)

// execCommandValue has the signature of a service's ExecStart property.
type execCommandValue struct {
	Path                           string
	Args                           []string
	Ignore                         bool
	Start, StartMono, Exit, ExitMo uint64
	PID                            uint32
	Code, Status                   int32
}

// serviceChange is a PropertiesChanged of the Service interface with
// values of every kind systemd sends: strings, integers of each width,
// booleans, byte arrays, arrays of structs, a struct, a nested variant.
func serviceChange() map[string]dbus.Variant {
	return map[string]dbus.Variant{
		"ActiveState":            dbus.MakeVariant("active"),
		"Result":                 dbus.MakeVariant("success"),
		"ExecMainCode":           dbus.MakeVariant(int32(1)),
		"ExecMainStatus":         dbus.MakeVariant(int32(3)),
		"ExecMainPID":            dbus.MakeVariant(uint32(4242)),
		"ExecMainStartTimestamp": dbus.MakeVariant(uint64(1764700000000000)),
		"InvocationID":           dbus.MakeVariant([]byte{0xde, 0xad, 0xbe, 0xef}),
		"NRestarts":              dbus.MakeVariant(uint32(0)),
		"StatusErrno":            dbus.MakeVariant(int32(0)),
		"OOMPolicy":              dbus.MakeVariant("stop"),
		"RemainAfterExit":        dbus.MakeVariant(true),
		"Nice":                   dbus.MakeVariant(int32(-1)),
		"IOWeight":               dbus.MakeVariant(uint64(100)),
		"OOMScoreAdjust":         dbus.MakeVariant(int32(0)),
		"ProtectSystem":          dbus.MakeVariant("no"),
		"UMask":                  dbus.MakeVariant(uint32(0o022)),
		"CPUWeight":              dbus.MakeVariant(uint16(100)),
		"Job": dbus.MakeVariant(struct {
			ID   uint32
			Path dbus.ObjectPath
		}{7, "/org/freedesktop/systemd1/job/7"}),
		"ExecStart": dbus.MakeVariant([]execCommandValue{
			{Path: "/bin/sh", Args: []string{"sh", "-c", "exit 3"}, PID: 4242, Code: 1, Status: 3},
			{Path: "/bin/true", Args: []string{"true"}},
		}),
		"Environment":   dbus.MakeVariant([]string{"A=1", "B=two"}),
		"Nested":        dbus.MakeVariant(dbus.MakeVariant(int16(-2))),
		"Sig":           dbus.MakeVariant(dbus.Signature{}),
		"Weight":        dbus.MakeVariant(1.5),
		"Byte":          dbus.MakeVariant(byte(9)),
		"Empty":         dbus.MakeVariant([]uint64{}),
		"CPUAffinity":   dbus.MakeVariant(map[string]dbus.Variant{"x": dbus.MakeVariant(uint32(1))}),
		"ExitStatuses":  dbus.MakeVariant(struct{ Codes, Signals []int32 }{[]int32{0, 1}, nil}),
		"StateChangeTs": dbus.MakeVariant(uint64(1)),
	}
}

// encodeSignal encodes a PropertiesChanged of changed and invalidated in
// order, as the manager sends it.
func encodeSignal(t testing.TB, order binary.ByteOrder, changed map[string]dbus.Variant, invalidated []string) []byte {
	t.Helper()
	body := []any{serviceIface, changed, invalidated}
	msg := &dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath:      dbus.MakeVariant(dbus.ObjectPath("/org/freedesktop/systemd1/unit/a_2eservice")),
		dbus.FieldInterface: dbus.MakeVariant(propsIface),
		dbus.FieldMember:    dbus.MakeVariant("PropertiesChanged"),
		dbus.FieldSignature: dbus.MakeVariant(dbus.SignatureOf(body...)),
	}, Body: body}
	var b bytes.Buffer
	if err := msg.EncodeTo(&b, order); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	order.PutUint32(data[8:12], 1) // EncodeTo leaves the serial 0
	return data
}

// TestSlimProps slims a PropertiesChanged in both byte orders, keeping
// several sets of properties, and decodes the result with godbus: the
// interface is as sent, the changed properties are exactly those kept,
// with their values, and no invalidated name is left.
func TestSlimProps(t *testing.T) {
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, keep := range []map[string]bool{
			{"ActiveState": true},
			{"ExecMainStatus": true, "Job": true, "InvocationID": true, "ExecMainStartTimestamp": true, "Absent": true},
			{"ExecStart": true, "Nested": true, "Byte": true, "CPUWeight": true, "ExitStatuses": true},
			{},
		} {
			invalidated := []string{"Foo", "Bar"}
			in := encodeSignal(t, order, serviceChange(), invalidated)
			out := slimProps(in, order, keep)
			if len(out) >= len(in) {
				t.Errorf("%v, keep %v: %d bytes from %d", order, keep, len(out), len(in))
			}
			msg, err := dbus.DecodeMessage(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("%v, keep %v: godbus cannot decode the result: %v", order, keep, err)
			}
			// What godbus decodes of the whole message, for the values.
			whole, err := dbus.DecodeMessage(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]dbus.Variant{}
			for k, v := range whole.Body[1].(map[string]dbus.Variant) {
				if keep[k] {
					want[k] = v
				}
			}
			got, _ := msg.Body[1].(map[string]dbus.Variant)
			if msg.Body[0] != serviceIface || !reflect.DeepEqual(msg.Body[2], []string{}) || len(got) != len(want) {
				t.Fatalf("%v, keep %v: decoded %v", order, keep, msg.Body)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v: decoded %v, want %v", order, got, want)
			}
		}
	}
}

// TestSlimPropsUnchanged checks that a message with nothing to drop, or
// that is not a PropertiesChanged body it can read, comes back as it is.
func TestSlimPropsUnchanged(t *testing.T) {
	all := map[string]bool{}
	for k := range serviceChange() {
		all[k] = true
	}
	in := encodeSignal(t, binary.LittleEndian, serviceChange(), nil)
	if out := slimProps(in, binary.LittleEndian, all); !bytes.Equal(out, in) {
		t.Error("a message keeping every property was changed")
	}
	cut := in[:len(in)-3]
	if out := slimProps(cut, binary.LittleEndian, map[string]bool{}); !bytes.Equal(out, cut) {
		t.Error("a truncated message was changed")
	}
}

// FuzzSlimProps slims arbitrary bytes as a PropertiesChanged: no panic,
// and a message that changed decodes with godbus to no property beyond
// those kept.
func FuzzSlimProps(f *testing.F) {
	f.Add(encodeSignal(f, binary.LittleEndian, serviceChange(), []string{"Foo"}))
	f.Add(encodeSignal(f, binary.BigEndian, serviceChange(), nil))
	keep := map[string]bool{"ActiveState": true, "ExecStart": true, "Job": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 16 {
			return
		}
		order, err := byteOrder(data[0])
		if err != nil {
			return
		}
		out := slimProps(data, order, keep)
		if bytes.Equal(out, data) {
			return
		}
		msg, err := dbus.DecodeMessage(bytes.NewReader(out))
		if err != nil {
			if _, err := dbus.DecodeMessage(bytes.NewReader(data)); err == nil {
				t.Fatalf("godbus decodes the message but not its slimmed copy: %v", err)
			}
			return
		}
		if len(msg.Body) > 1 {
			changed, _ := msg.Body[1].(map[string]dbus.Variant)
			for k := range changed {
				if !keep[k] {
					t.Fatalf("%s was kept", k)
				}
			}
		}
	})
}
