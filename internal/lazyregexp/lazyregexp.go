// Package lazyregexp is a package-level regular expression that is
// compiled at its first use, not at program start.
//
// Every unitrun process pays for its packages' initialisation, and the
// hooks systemd runs at each app or job exit are short unitrun processes
// that use few of the patterns the binary holds; a pattern with a counted
// repetition such as {0,127} compiles to a large program. In a test
// binary, New compiles at once, so that a bad pattern fails every test
// run rather than the first call that needs it.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regexp.Regexp compiled on first use. Its methods are safe
// for concurrent use.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// New returns the pattern str, compiled on first use; an invalid pattern
// panics then, as regexp.MustCompile does.
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.re()
	}
	return r
}

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

// String returns the source text of the pattern.
func (r *Regexp) String() string { return r.str }

// MatchString reports whether s contains a match of the pattern.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// Match reports whether b contains a match of the pattern.
func (r *Regexp) Match(b []byte) bool { return r.re().Match(b) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }

// inTest reports whether this is a test binary (go test names it *.test).
var inTest = len(os.Args) > 0 && strings.HasSuffix(os.Args[0], ".test")

// FindAllString is regexp.Regexp.FindAllString.
func (r *Regexp) FindAllString(s string, n int) []string { return r.re().FindAllString(s, n) }

// ReplaceAllStringFunc is regexp.Regexp.ReplaceAllStringFunc.
func (r *Regexp) ReplaceAllStringFunc(s string, repl func(string) string) string {
	return r.re().ReplaceAllStringFunc(s, repl)
}
