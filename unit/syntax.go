package unit

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// QuoteArg quotes s as one word of a command line in a unit file
// (ExecStart= and the other Exec*= settings, systemd.service(5) "Command
// lines"). The result is always in double quotes. Inside them, backslash,
// double quote, newline and tab are written \\, \", \n and \t; other
// control characters (below 0x20, and 0x7f) and bytes that are not part of
// valid UTF-8 are written \xNN; '%' is doubled, so that no specifier is
// expanded; '$' is doubled, so that no environment variable is substituted.
// systemd then reads exactly s as the argument.
//
// A NUL byte cannot reach systemd: QuoteArg writes it as \x00, which
// systemd refuses to decode. ExecLine reports it as an error.
func QuoteArg(s string) string { return quote(s, true) }

// quote writes s in double quotes with the escapes of QuoteArg, doubling
// '$' only if dollar is set.
func quote(s string, dollar bool) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r < 0x20 && r != '\n' && r != '\t', r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xf])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '%':
			b.WriteString("%%")
		case r == '$' && dollar:
			b.WriteString("$$")
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// ExecLine returns argv as the value of ExecStart= (or another Exec*=
// setting): the QuoteArg of each argument, separated by spaces. systemd
// runs the file argv[0] with exactly argv as arguments.
//
// It fails if argv is empty or an argument contains a NUL byte, and if
// argv[0] is not a path systemd can run exactly: it must be absolute
// (systemd would search $PATH for a bare name; ExecLine does not let it), must
// not end in '/', must have no component longer than 255 bytes and be
// shorter than 4096 bytes, and must not contain quotes, backslashes or
// control characters (systemd refuses them in the executable's path) or
// '$' (systemd substitutes variables in argv[0] but not in the path it
// executes, so no quoting can make both exact).
func ExecLine(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("exec line: empty argv")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return "", fmt.Errorf("exec line: argv[%d] %q: contains a NUL byte", i, a)
		}
	}
	if err := checkExecutable(argv[0]); err != nil {
		return "", fmt.Errorf("exec line: argv[0] %q: %v", argv[0], err)
	}
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(QuoteArg(a))
	}
	return b.String(), nil
}

// checkExecutable applies the rules of systemd's config_parse_exec to the
// executable's path.
func checkExecutable(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return errors.New("not an absolute path")
	case strings.HasSuffix(p, "/"):
		return errors.New("names a directory (ends in '/')")
	case len(p) >= 4096:
		return fmt.Errorf("%d bytes long (max 4095)", len(p))
	}
	for _, c := range strings.Split(p, "/") {
		if len(c) > 255 {
			return fmt.Errorf("component %q is %d bytes long (max 255)", c, len(c))
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c < 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '\\':
			return fmt.Errorf("%s not allowed (systemd refuses quotes, backslashes and control characters in the executable path)", describeChar(p, i))
		case c == '$':
			return errors.New("character '$' not allowed (systemd would substitute variables in argv[0] but not in the path it runs)")
		}
	}
	return nil
}

// QuoteEnv returns the assignment key=value as a word for Environment=,
// quoted and escaped like QuoteArg except that '$' is left alone
// (Environment= substitutes no variables), so that systemd sets exactly
// key to value. The key must be a POSIX variable name, [A-Za-z_][A-Za-z0-9_]*;
// the value must be valid UTF-8 (systemd ignores other assignments) and
// must not contain a NUL byte.
func QuoteEnv(key, value string) (string, error) {
	if err := checkEnvName(key); err != nil {
		return "", err
	}
	if err := CheckEnvValue(key, value); err != nil {
		return "", err
	}
	return quote(key+"="+value, false), nil
}

func checkEnvName(key string) error {
	if !isEnvName(key) {
		return fmt.Errorf("environment variable name %q: must match [A-Za-z_][A-Za-z0-9_]*", key)
	}
	return nil
}

// CheckEnvValue returns an error, naming variable key, unless value can be
// passed to a command: no NUL byte, valid UTF-8 (systemd ignores other
// assignments).
func CheckEnvValue(key, value string) error {
	switch {
	case strings.IndexByte(value, 0) >= 0:
		return fmt.Errorf("environment variable %s: value contains a NUL byte", key)
	case !utf8.ValidString(value):
		return fmt.Errorf("environment variable %s: value is not valid UTF-8 (systemd ignores such assignments)", key)
	}
	return nil
}

func isEnvName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// EscapeSpecifiers doubles every '%' in s, for settings that expand
// specifiers but take the rest of the value verbatim, such as Description=
// and paths.
func EscapeSpecifiers(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// splitWords splits s into words as systemd's extract_first_word does with
// the flag EXTRACT_UNQUOTE, and EXTRACT_CUNESCAPE too if cunescape is set,
// splitting on white space (" \t\n\r"). Single or double quotes group
// characters into a word and are removed; a backslash escapes the next
// character, which with cunescape must start a C escape sequence (\n, \t,
// \xNN, \NNN, \uNNNN, ... as in systemd.syntax(7)) and without it stands
// for itself. An unbalanced quote, a trailing backslash and a bad escape
// are errors.
func splitWords(s string, cunescape bool) ([]string, error) {
	flags := xUnquote
	if cunescape {
		flags |= xCunescape
	}
	return allWords(s, whitespace, flags)
}

// allWords returns every word of s, as repeated calls of extractWord.
func allWords(s, seps string, flags extractFlags) ([]string, error) {
	var words []string
	for c := (cursor{s: s}); ; {
		w, ok, err := c.extractWord(seps, flags)
		if err != nil {
			return nil, err
		}
		if !ok {
			return words, nil
		}
		words = append(words, w)
	}
}

// extractFlags are the flags of systemd's extract_first_word that its
// property parsers use.
type extractFlags uint

const (
	xCunescape          extractFlags = 1 << iota // decode C escapes after a backslash
	xUnescapeSeparators                          // a backslash may escape a separator or itself
	xUnquote                                     // quotes group and are removed
	xDontCoalesce                                // each separator ends a word, empty words too
	xRetainEscape                                // a backslash stays as it is
)

// A cursor is the position in a string that extract_first_word advances;
// done is its NULL pointer, after the last word.
type cursor struct {
	s    string
	i    int
	done bool
}

// rest returns what follows the cursor, and false after the last word
// (where the C pointer is NULL).
func (c *cursor) rest() (string, bool) {
	if c.done {
		return "", false
	}
	return c.s[c.i:], true
}

// extractWord is systemd's extract_first_word: it returns the next word
// of c, separated by any byte of seps, and ok false after the last one.
func (c *cursor) extractWord(seps string, flags extractFlags) (word string, ok bool, err error) {
	if c.done {
		return "", false, nil
	}
	isSep := func(b byte) bool { return strings.IndexByte(seps, b) >= 0 }
	i := c.i
	for ; i < len(c.s) && isSep(c.s[i]); i++ {
		if flags&xDontCoalesce != 0 {
			c.i = i + 1
			return "", true, nil
		}
	}
	if i == len(c.s) {
		c.done = true
		return "", flags&xDontCoalesce != 0, nil
	}
	var w []byte
	var quote byte
	backslash := false
	for ; ; i++ {
		switch {
		case backslash:
			if i == len(c.s) {
				return "", false, errors.New("trailing backslash")
			}
			ch := c.s[i]
			if flags&(xCunescape|xUnescapeSeparators) == 0 {
				w = append(w, ch)
			} else if n, err := cunescapeOne(c.s[i:], &w); flags&xCunescape != 0 && err == nil {
				i += n - 1
			} else if flags&xUnescapeSeparators != 0 && (isSep(ch) || ch == '\\') {
				w = append(w, ch)
			} else {
				return "", false, fmt.Errorf("bad escape sequence at byte %d", i-1)
			}
			backslash = false
		case quote != 0:
			if i == len(c.s) {
				return "", false, fmt.Errorf("unbalanced %c quote", quote)
			}
			switch ch := c.s[i]; {
			case ch == quote:
				quote = 0
			case ch == '\\' && flags&xRetainEscape == 0:
				backslash = true
			default:
				w = append(w, ch)
			}
		default:
			if i == len(c.s) {
				c.done = true
				return string(w), true, nil
			}
			switch ch := c.s[i]; {
			case (ch == '\'' || ch == '"') && flags&xUnquote != 0:
				quote = ch
			case ch == '\\' && flags&xRetainEscape == 0:
				backslash = true
			case isSep(ch):
				if flags&xDontCoalesce != 0 {
					c.i = i + 1
					return string(w), true, nil
				}
				for i < len(c.s) && isSep(c.s[i]) {
					i++
				}
				c.i, c.done = i, i == len(c.s)
				return string(w), true, nil
			default:
				w = append(w, ch)
			}
		}
	}
}

// cunescapeOne is systemd's cunescape_one without accepting NUL: it decodes
// the escape sequence that p starts with (p follows the backslash), appends
// the result to *w and returns the number of bytes of p it used.
func cunescapeOne(p string, w *[]byte) (int, error) {
	hex := func(n int) (uint32, bool) {
		if len(p) < 1+n {
			return 0, false
		}
		var v uint32
		for i := 1; i <= n; i++ {
			d := digitValue(p[i])
			if d >= 16 {
				return 0, false
			}
			v = v<<4 | uint32(d)
		}
		return v, true
	}
	switch c := p[0]; c {
	case 'a', 'b', 'f', 'n', 'r', 't', 'v', '\\', '"', '\'', 's':
		*w = append(*w, "\a\b\f\n\r\t\v\\\"' "[strings.IndexByte("abfnrtv\\\"'s", c)])
		return 1, nil
	case 'x':
		v, ok := hex(2)
		if !ok || v == 0 {
			return 0, errSyntax
		}
		*w = append(*w, byte(v))
		return 3, nil
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		v, ok := hex(n)
		if !ok || v == 0 || c == 'U' && !unicharIsValid(v) {
			return 0, errSyntax
		}
		*w = appendUnichar(*w, v)
		return 1 + n, nil
	case '0', '1', '2', '3', '4', '5', '6', '7':
		if len(p) < 3 {
			return 0, errSyntax
		}
		var v uint32
		for i := range 3 {
			if p[i] < '0' || p[i] > '7' {
				return 0, errSyntax
			}
			v = v<<3 | uint32(p[i]-'0')
		}
		if v == 0 || v > 255 {
			return 0, errSyntax
		}
		*w = append(*w, byte(v))
		return 3, nil
	}
	return 0, errSyntax
}

// unicharIsValid is systemd's unichar_is_valid.
func unicharIsValid(c uint32) bool {
	return c < 0x110000 && c&0xfffff800 != 0xd800 && (c < 0xfdd0 || c > 0xfdef) && c&0xfffe != 0xfffe
}

// appendUnichar is systemd's utf8_encode_unichar, which, unlike
// utf8.AppendRune, encodes surrogates as they are.
func appendUnichar(w []byte, c uint32) []byte {
	switch {
	case c < 1<<7:
		return append(w, byte(c))
	case c < 1<<11:
		return append(w, byte(0xc0|c>>6), byte(0x80|c&0x3f))
	case c < 1<<16:
		return append(w, byte(0xe0|c>>12), byte(0x80|c>>6&0x3f), byte(0x80|c&0x3f))
	}
	return append(w, byte(0xf0|c>>18), byte(0x80|c>>12&0x3f), byte(0x80|c>>6&0x3f), byte(0x80|c&0x3f))
}
