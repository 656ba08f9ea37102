package unit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A File is a unit file (or drop-in) as an ordered list of sections. It is
// rendered exactly in the order built; nothing is sorted or merged.
type File struct {
	Sections []Section
}

// A Section is one [Name] section of a unit file.
type Section struct {
	Name    string
	Options []Option
}

// An Option is one Key=Value line. Value is written verbatim: it must
// already be quoted and escaped as its setting requires (see QuoteArg,
// ExecLine, QuoteEnv and EscapeSpecifiers).
type Option struct {
	Key, Value string
}

// maxLine is systemd's LONG_LINE_MAX: a unit file with a line this long or
// longer fails to load.
const maxLine = 1 << 20

// Set appends the option key=value to the section named section, adding
// the section after the existing ones if the file has none of that name.
// Set never replaces an option: a repeated key is written again, which
// systemd reads as an addition for list settings and as an override for
// the others.
func (f *File) Set(section, key, value string) {
	for i := range f.Sections {
		if f.Sections[i].Name == section {
			f.Sections[i].Options = append(f.Sections[i].Options, Option{key, value})
			return
		}
	}
	f.Sections = append(f.Sections, Section{Name: section, Options: []Option{{key, value}}})
}

// Bytes renders f: each section as "[Name]" followed by one "Key=Value"
// line per option, with a blank line between sections.
//
// It fails, naming the section and key, if a section name or key is not
// made of ASCII letters, digits and '-', or if systemd would not read a
// value back exactly as given: if it contains a NUL byte or a line break
// ('\n' or '\r'), is not valid UTF-8, begins or ends with a space or tab
// (systemd strips them), or ends in an odd number of backslashes (systemd
// joins the next line to it); or if the line is 1 MiB or longer.
func (f *File) Bytes() ([]byte, error) {
	var b bytes.Buffer
	for i, s := range f.Sections {
		if err := checkIdent(s.Name); err != nil {
			return nil, fmt.Errorf("unit file section %q: %v", s.Name, err)
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("[" + s.Name + "]\n")
		for _, o := range s.Options {
			if err := checkIdent(o.Key); err != nil {
				return nil, fmt.Errorf("unit file [%s] key %q: %v", s.Name, o.Key, err)
			}
			if err := checkValue(o.Key, o.Value); err != nil {
				return nil, fmt.Errorf("unit file [%s] %s=: %v", s.Name, o.Key, err)
			}
			b.WriteString(o.Key + "=" + o.Value + "\n")
		}
	}
	return b.Bytes(), nil
}

func checkIdent(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return fmt.Errorf("%s not allowed (allowed: ASCII letters, digits, '-')", describeChar(s, i))
		}
	}
	return nil
}

func checkValue(key, v string) error {
	switch {
	case strings.IndexByte(v, 0) >= 0:
		return errors.New("value contains a NUL byte")
	case strings.IndexByte(v, '\n') >= 0:
		return errors.New(`value contains a raw newline (escape it as \n)`)
	case strings.IndexByte(v, '\r') >= 0:
		return errors.New(`value contains a raw carriage return, which systemd reads as a line break`)
	case !utf8.ValidString(v):
		return errors.New(`value is not valid UTF-8 (systemd ignores the line; escape bytes as \xNN where the setting allows)`)
	case strings.TrimLeft(v, " \t") != v:
		return errors.New("value begins with white space, which systemd strips (quote it)")
	case strings.TrimRight(v, " \t") != v:
		return errors.New("value ends with white space, which systemd strips (quote it)")
	case (len(v)-len(strings.TrimRight(v, `\`)))%2 == 1:
		return errors.New(`value ends in a backslash, which makes systemd join the next line to it`)
	case len(key)+1+len(v) >= maxLine:
		return fmt.Errorf("line is %d bytes long (max %d)", len(key)+1+len(v), maxLine-1)
	}
	return nil
}
