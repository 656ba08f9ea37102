package busframe

import "encoding/binary"

// slimProps returns msg, a PropertiesChanged signal (body "sa{sv}as") in
// byte order order, with only the changed properties that keep names and
// no invalidated ones (an Event has no place for them), or msg itself
// when it holds nothing else or cannot be read as one (godbus then
// reports what is wrong with it). A manager's PropertiesChanged of a unit
// carries some twenty properties and names twenty more as invalidated, 1
// to 1.2 KB, and a job's run sends 17 of them; godbus decoding them all
// was a fifth of the host API daemon's CPU (docs/performance.md).
//
// The kept entries are copied whole: each dict entry starts at an offset
// that is a multiple of 8 from the message's start, and so it does in the
// result, so every value inside keeps its alignment.
func slimProps(msg []byte, order binary.ByteOrder, keep map[string]bool) []byte {
	bodyStart := 16 + (int(order.Uint32(msg[12:16]))+7)&^7
	bodyLen := int(order.Uint32(msg[4:8]))
	if bodyStart+bodyLen != len(msg) {
		return msg
	}
	r := reader{b: msg, order: order}
	// s interface
	r.off = bodyStart
	if !r.skip("s") {
		return msg
	}
	// a{sv} changed: its length, then entries from an offset aligned to 8.
	r.align(4)
	lenAt := r.off
	n, ok := r.u32()
	if !ok {
		return msg
	}
	r.align(8)
	entries, end := r.off, r.off+int(n)
	if end > len(msg) {
		return msg
	}
	out := append(make([]byte, 0, len(msg)), msg[:entries]...)
	dropped := false
	for r.off < end {
		r.align(8)
		start := r.off
		key, ok := r.str()
		if !ok || !r.skip("v") || r.off > end {
			return msg
		}
		if !keep[key] {
			dropped = true
			continue
		}
		out = pad(out, 8)
		out = append(out, msg[start:r.off]...)
	}
	// as invalidated
	if r.off != end || !r.skip("as") || r.off != len(msg) {
		return msg
	}
	if !dropped && order.Uint32(msg[(end+3)&^3:]) == 0 {
		return msg
	}
	order.PutUint32(out[lenAt:], uint32(len(out)-entries))
	out = pad(out, 4)
	out = append(out, 0, 0, 0, 0) // no invalidated names
	order.PutUint32(out[4:8], uint32(len(out)-bodyStart))
	return out
}

// pad appends zero bytes to b up to a multiple of n.
func pad(b []byte, n int) []byte {
	for len(b)%n != 0 {
		b = append(b, 0)
	}
	return b
}
