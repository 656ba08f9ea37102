package config

import (
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
)

// go-toml decodes values but tells where a key is written only in its
// errors, so errors found after decoding (a value of the wrong type, a
// broken rule) get their line from scanLines: a reading of the document's
// structure alone (tables, keys, arrays, inline tables, the extent of
// strings), made after go-toml has accepted the document. It never decides
// a value; where it does not follow the document, errors name a parent's
// line or none, and FuzzLoadConfig checks that it finds every key go-toml
// decodes.

// A keyPath names a value of a document: each key quoted, each array element
// by its index in brackets, so that no two values share a keyPath.
type keyPath string

func (p keyPath) key(k string) keyPath { return p + keyPath(strconv.Quote(k)) }

func (p keyPath) index(i int) keyPath { return p + keyPath("["+strconv.Itoa(i)+"]") }

// keys returns p extended by the dotted key rel ("args.max"); "" is p.
func (p keyPath) keys(rel string) keyPath {
	if rel == "" {
		return p
	}
	for _, k := range strings.Split(rel, ".") {
		p = p.key(k)
	}
	return p
}

// lines maps the values of a document to the line, 1-based, where each is
// first written: a key's line, a table header's, or for an element of an
// array the line where the element starts.
type lines map[keyPath]int

// line returns the line of base's dotted key rel, else of its nearest
// parent written, else of base; 0 when none is known.
func (l lines) line(base keyPath, rel string) int {
	parts := strings.Split(rel, ".")
	for n := len(parts); n > 0 && rel != ""; n-- {
		if ln, ok := l[base.keys(strings.Join(parts[:n], "."))]; ok {
			return ln
		}
	}
	return l[base]
}

func (l lines) set(p keyPath, line int) {
	if _, ok := l[p]; !ok {
		l[p] = line
	}
}

// scanner reads the structure of a TOML document that go-toml has
// accepted. On anything it does not expect it stops (sets i past the
// end), keeping the lines found so far.
type scanner struct {
	b      []byte
	i      int
	line   int
	lines  lines
	arrays map[keyPath]int // arrays of tables ([[name]]): their elements so far
}

// scanLines returns the lines of the values of data, a TOML document.
func scanLines(data []byte) lines {
	s := &scanner{b: data, line: 1, lines: make(lines), arrays: make(map[keyPath]int)}
	var table keyPath
	for s.space(true); s.i < len(s.b); s.space(true) {
		if s.b[s.i] != '[' {
			s.keyValue(table)
			continue
		}
		line, array := s.line, s.at("[[")
		if array {
			s.i += 2
		} else {
			s.i++
		}
		table = s.header(s.keys(), array, line)
		if array {
			s.expect("]]")
		} else {
			s.expect("]")
		}
	}
	return s.lines
}

// header returns the keyPath of the table a header names, each part of its
// key taken in the last element of an array of tables, and records its
// line; a header [[name]] adds an element to the array name.
func (s *scanner) header(keys []string, array bool, line int) keyPath {
	var p keyPath
	for n, k := range keys {
		p = p.key(k)
		if array && n == len(keys)-1 {
			s.lines.set(p, line) // the array's line: its first header's
			s.arrays[p]++
		}
		if count, ok := s.arrays[p]; ok {
			p = p.index(count - 1)
		}
		s.lines.set(p, line)
	}
	return p
}

// keyValue reads key = value in the table at p.
func (s *scanner) keyValue(p keyPath) {
	line := s.line
	for _, k := range s.keys() {
		p = p.key(k)
		s.lines.set(p, line)
	}
	s.space(false)
	s.expect("=")
	s.value(p)
}

// value reads the value at p, recording the keys of inline tables and
// where each array element starts.
func (s *scanner) value(p keyPath) {
	s.space(false)
	if s.i >= len(s.b) {
		return
	}
	switch s.b[s.i] {
	case '"', '\'':
		s.str()
	case '[':
		s.i++
		for n := 0; ; n++ {
			s.space(true)
			if s.i >= len(s.b) || s.b[s.i] == ']' {
				s.i++
				return
			}
			s.lines.set(p.index(n), s.line)
			s.value(p.index(n))
			s.space(true)
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
			}
		}
	case '{':
		s.i++
		for {
			s.space(true)
			if s.i >= len(s.b) || s.b[s.i] == '}' {
				s.i++
				return
			}
			s.keyValue(p)
			s.space(true)
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
			}
		}
	default:
		s.scalar()
	}
}

// scalar reads a number, boolean or date-time; a date and a time may be
// separated by a space.
func (s *scanner) scalar() {
	start := s.i
	for s.i < len(s.b) && !strings.ContainsRune(" \t\r\n,]}#", rune(s.b[s.i])) {
		s.i++
		if s.i-start == 10 && s.at(" ") && s.i+1 < len(s.b) && isDigit(s.b[s.i+1]) && s.b[start+4] == '-' {
			s.i++
		}
	}
	if s.i == start {
		s.i = len(s.b) + 1
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// keys reads a key, dotted or not, and returns its parts.
func (s *scanner) keys() []string {
	var parts []string
	for {
		s.space(false)
		if s.i >= len(s.b) {
			return parts
		}
		switch c := s.b[s.i]; {
		case c == '"' || c == '\'':
			start := s.i
			s.str()
			parts = append(parts, unquoteKey(s.b[start:min(s.i, len(s.b))]))
		default:
			start := s.i
			for s.i < len(s.b) && isBare(s.b[s.i]) {
				s.i++
			}
			if s.i == start {
				s.i = len(s.b) + 1
				return parts
			}
			parts = append(parts, string(s.b[start:s.i]))
		}
		s.space(false)
		if !s.at(".") {
			return parts
		}
		s.i++
	}
}

func isBare(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || isDigit(c) || c == '_' || c == '-'
}

// str reads a string of any of TOML's four kinds, counting its lines.
func (s *scanner) str() {
	q := s.b[s.i]
	if delim := strings.Repeat(string(q), 3); s.at(delim) {
		s.i += 3
		for s.i < len(s.b) && !s.at(delim) {
			s.char(q == '"')
		}
		s.i += 3
		for n := 0; n < 2 && s.at(string(q)); n++ { // quotes just before the closing ones
			s.i++
		}
		return
	}
	s.i++
	for s.i < len(s.b) && s.b[s.i] != q && s.b[s.i] != '\n' {
		s.char(q == '"')
	}
	s.i++
}

// char reads one character of a string, or an escape when escapes apply.
func (s *scanner) char(escapes bool) {
	if escapes && s.b[s.i] == '\\' {
		s.i++
		if s.i >= len(s.b) {
			return
		}
	}
	if s.b[s.i] == '\n' {
		s.line++
	}
	s.i++
}

// space skips blanks and comments, and newlines when newlines is true.
func (s *scanner) space(newlines bool) {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == ' ' || c == '\t':
			s.i++
		case c == '#':
			for s.i < len(s.b) && s.b[s.i] != '\n' {
				s.i++
			}
		case newlines && c == '\n':
			s.line++
			s.i++
		case newlines && c == '\r':
			s.i++
		default:
			return
		}
	}
}

// at reports whether the document continues with lit at s.i.
func (s *scanner) at(lit string) bool {
	return s.i+len(lit) <= len(s.b) && string(s.b[s.i:s.i+len(lit)]) == lit
}

func (s *scanner) expect(lit string) {
	if !s.at(lit) {
		s.i = len(s.b) + 1
		return
	}
	s.i += len(lit)
}

// unquoteKey returns the key that a quoted key q ("..." or '...') names:
// the string q is as a TOML value, which go-toml unescapes.
func unquoteKey(q []byte) string {
	var v struct {
		K string `toml:"k"`
	}
	if toml.Unmarshal(append([]byte("k = "), q...), &v) != nil {
		return string(q)
	}
	return v.K
}
