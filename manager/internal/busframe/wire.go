package busframe

import "encoding/binary"

// reader walks the values of a D-Bus message, offsets counted from its
// start, as alignment is. Its methods report false for data that runs
// past the message or does not fit the signature; a false leaves off
// anywhere.
type reader struct {
	b     []byte
	order binary.ByteOrder
	off   int
	depth int
}

// maxDepth bounds the nesting of containers, as the D-Bus specification
// does (32 arrays and 32 structs).
const maxDepth = 64

func (r *reader) align(n int) { r.off = (r.off + n - 1) &^ (n - 1) }

func (r *reader) u32() (uint32, bool) {
	r.align(4)
	if r.off+4 > len(r.b) {
		return 0, false
	}
	v := r.order.Uint32(r.b[r.off:])
	r.off += 4
	return v, true
}

// str reads a string or object path.
func (r *reader) str() (string, bool) {
	n, ok := r.u32()
	if !ok || uint64(r.off)+uint64(n)+1 > uint64(len(r.b)) {
		return "", false
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n) + 1
	return s, true
}

// sig reads a signature.
func (r *reader) sig() (string, bool) {
	if r.off >= len(r.b) {
		return "", false
	}
	n := int(r.b[r.off])
	if r.off+1+n+1 > len(r.b) {
		return "", false
	}
	s := string(r.b[r.off+1 : r.off+1+n])
	r.off += 1 + n + 1
	return s, true
}

// skip moves past one value of each complete type in sig.
func (r *reader) skip(sig string) bool {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > maxDepth {
		return false
	}
	for sig != "" {
		t, rest, ok := nextType(sig)
		if !ok || !r.skipOne(t) {
			return false
		}
		sig = rest
	}
	return r.off <= len(r.b)
}

// skipOne moves past one value of the complete type t.
func (r *reader) skipOne(t string) bool {
	switch t[0] {
	case 'y':
		r.off++
	case 'n', 'q':
		r.align(2)
		r.off += 2
	case 'b', 'i', 'u', 'h':
		r.align(4)
		r.off += 4
	case 'x', 't', 'd':
		r.align(8)
		r.off += 8
	case 's', 'o':
		_, ok := r.str()
		return ok
	case 'g':
		_, ok := r.sig()
		return ok
	case 'v':
		s, ok := r.sig()
		if !ok {
			return false
		}
		if inner, rest, ok := nextType(s); !ok || rest != "" || !r.skip(inner) {
			return false
		}
	case 'a':
		n, ok := r.u32()
		if !ok {
			return false
		}
		r.align(alignOf(t[1]))
		r.off += int(n)
	case '(', '{': // a struct or dict entry: its fields in order
		r.align(8)
		return r.skip(t[1 : len(t)-1])
	default:
		return false
	}
	return r.off <= len(r.b)
}

// alignOf returns the alignment of values of the type that starts with c.
func alignOf(c byte) int {
	switch c {
	case 'n', 'q':
		return 2
	case 'b', 'i', 'u', 'h', 's', 'o', 'a':
		return 4
	case 'x', 't', 'd', '(', '{':
		return 8
	}
	return 1
}

// nextType splits the first complete type off sig.
func nextType(sig string) (t, rest string, ok bool) {
	if sig == "" {
		return "", "", false
	}
	switch sig[0] {
	case 'a':
		t, rest, ok := nextType(sig[1:])
		return "a" + t, rest, ok
	case '(', '{':
		closing := byte(')')
		if sig[0] == '{' {
			closing = '}'
		}
		depth := 0
		for i := 0; i < len(sig); i++ {
			switch sig[i] {
			case '(', '{':
				depth++
			case ')', '}':
				depth--
				if depth == 0 {
					if sig[i] != closing || i < 2 {
						return "", "", false
					}
					return sig[:i+1], sig[i+1:], true
				}
			}
		}
		return "", "", false
	}
	return sig[:1], sig[1:], true
}
