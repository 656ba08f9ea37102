package inject

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/unitrun/unitrun/internal/lazyregexp"
)

// osReleasePaths are where os-release(5) says to look, in order.
var osReleasePaths = []string{"/etc/os-release", "/usr/lib/os-release"}

var osReleaseKeyRE = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ReadOSRelease reads an os-release(5) file into its fields. An empty path
// reads /etc/os-release, or /usr/lib/os-release when the former does not
// exist.
//
// Each line is empty, a comment starting with '#', or KEY=value. The value
// is read as one shell word: single quotes keep everything up to the next
// single quote; within double quotes a backslash escapes '"', '\', '$' and
// '`' and is kept before other characters; outside quotes a backslash
// escapes any character. Unquoted blanks end the value, and may be followed
// only by blanks or a comment. No expansion is done. A key given twice
// keeps its last value. Errors name the file and line.
func ReadOSRelease(path string) (map[string]string, error) {
	var data []byte
	var err error
	if path != "" {
		data, err = os.ReadFile(path)
	} else {
		for _, path = range osReleasePaths {
			if data, err = os.ReadFile(path); !errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("inject: os-release %s: %w", path, reason(err))
	}
	fields := make(map[string]string)
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		key, raw, ok := strings.Cut(line, "=")
		if !ok || !osReleaseKeyRE.MatchString(key) {
			return nil, fmt.Errorf("inject: %s:%d: want KEY=value with KEY a shell variable name", path, i+1)
		}
		val, err := shellWord(raw)
		if err != nil {
			return nil, fmt.Errorf("inject: %s:%d: %s: %w", path, i+1, key, err)
		}
		fields[key] = val
	}
	return fields, nil
}

// shellWord reads s as a single shell word, as ReadOSRelease describes.
func shellWord(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return "", errors.New("unterminated single quote")
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				b.WriteByte(s[i])
			}
			if i == len(s) {
				return "", errors.New("unterminated double quote")
			}
		case '\\':
			if i+1 == len(s) {
				return "", errors.New("backslash at end of line")
			}
			i++
			b.WriteByte(s[i])
		case ' ', '\t':
			if rest := strings.TrimLeft(s[i:], " \t"); rest != "" && rest[0] != '#' {
				return "", errors.New("unquoted blank inside the value: quote it")
			}
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
