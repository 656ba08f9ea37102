package unit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// This file compares the package with systemd's binaries: systemd-escape
// and systemd-analyze.

func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("skipping: %s not found: %v", name, err)
	}
	return p
}

// run runs a command and returns its standard output, failing the test if
// it cannot start.
func run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", name, err)
	}
	if err != nil {
		err = fmt.Errorf("%v: %s", err, stderr.Bytes())
	}
	return strings.TrimSuffix(stdout.String(), "\n"), err
}

func TestEscapeMatchesSystemdEscape(t *testing.T) {
	escape := lookPath(t, "systemd-escape")
	inputs := []string{"-", "--help", "a--b", "x/.y", "/", "\x01\x1f", "tab\t", " ", "\u00e9t\u00e9/\u65e5"}
	for _, tt := range escapeTests {
		inputs = append(inputs, tt.in)
	}
	for _, in := range inputs {
		got, err := run(t, escape, "--", in)
		if err != nil || got != Escape(in) {
			t.Errorf("systemd-escape %q = %q, %v; Escape = %q", in, got, err, Escape(in))
		}
		back, err := run(t, escape, "--unescape", "--", Escape(in))
		if err != nil || back != in {
			t.Errorf("systemd-escape --unescape %q = %q, %v; want %q", Escape(in), back, err, in)
		}
	}
}

func TestEscapePathMatchesSystemdEscape(t *testing.T) {
	escape := lookPath(t, "systemd-escape")
	for _, tt := range escapePathTests {
		got, err := run(t, escape, "--path", "--", tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("systemd-escape --path %q = %q, %v; want success: %v", tt.in, got, err, tt.ok)
			continue
		}
		if tt.ok && got != EscapePath(tt.in) {
			t.Errorf("systemd-escape --path %q = %q; EscapePath = %q", tt.in, got, EscapePath(tt.in))
		}
	}
}

func TestUnescapeMatchesSystemdEscape(t *testing.T) {
	escape := lookPath(t, "systemd-escape")
	for _, in := range []string{"a-b", `\x2D\x2d`, `\xc3\xa9`, `\xff`, "a b", "-", "", `\`, `a\x`, `a\x4`, `a\x4g`, `a\y41`, `\X41`, `ok\x41\n`} {
		want, err := Unescape(in)
		got, sysErr := run(t, escape, "--unescape", "--", in)
		if (err == nil) != (sysErr == nil) || err == nil && got != want {
			t.Errorf("Unescape(%q) = %q, %v; systemd-escape --unescape = %q, %v", in, want, err, got, sysErr)
		}
	}
}

func TestParseTimeSpanMatchesSystemdAnalyze(t *testing.T) {
	analyze := lookPath(t, "systemd-analyze")
	for _, tt := range timeSpanTests {
		out, err := run(t, analyze, "timespan", "--", tt.in)
		if (err != nil) != tt.err {
			t.Errorf("systemd-analyze timespan %q: %q, %v; want error: %v", tt.in, out, err, tt.err)
			continue
		}
		if tt.err {
			continue
		}
		_, usec, _ := strings.Cut(out, "μs: ")
		usec, _, _ = strings.Cut(usec, "\n")
		if got, err := strconv.ParseUint(usec, 10, 64); err != nil || got != tt.usec {
			t.Errorf("systemd-analyze timespan %q: %q, want %d μs", tt.in, out, tt.usec)
		}
	}
}

// verify runs "systemd-analyze verify" on a unit file x.service with the
// content data, and returns what it printed: its warnings and errors, or,
// with dump set, the state of the loaded unit, which it prints at log level
// debug. It reports a nonzero exit as an error.
func verify(t *testing.T, data []byte, dump bool) (string, error) {
	t.Helper()
	analyze := lookPath(t, "systemd-analyze")
	path := filepath.Join(t.TempDir(), "x.service")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	level := "info"
	if dump {
		level = "debug"
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(analyze, "verify", "--man=no", "--recursive-errors=no", path)
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_LEVEL="+level, "SYSTEMD_LOG_TARGET=console", "SYSTEMD_LOG_COLOR=0")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("systemd-analyze: %v", err)
	}
	if dump {
		return stdout.String(), err
	}
	return stdout.String() + stderr.String(), err
}

// executable creates an executable file with the given name in a new
// directory and returns its path.
func executable(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// verifyEnv are environment values that the unit-file test passes through
// QuoteEnv.
var verifyEnv = []string{
	"",
	"plain",
	"two  words",
	" padded ",
	`"double" 'single'`,
	`back\slash \n \x41 \`,
	"%h %% %i %",
	"$HOME ${HOME} $$",
	"new\nline",
	"tab\there",
	"bell\a esc\x1b del\x7f cr\r",
	"é 日本",
	"=x=",
	";",
}

// TestVerify renders a unit with nasty arguments, environment values and
// description, has systemd 252 check it and dump what it parsed, and
// compares: the argv systemd stores (before variable substitution, which
// TestOracle checks with systemd's own code) is the given one with each '$'
// doubled, and the environment and description are exactly the given ones.
func TestVerify(t *testing.T) {
	lookPath(t, "systemd-analyze")
	argv := append([]string{executable(t, "run me 100% é\xff")}, nastyArgs...)
	description := `Nasty: 100% %h %% "quoted" 'single' \back\ $X ${Y} é 日本`

	var f File
	f.Set("Unit", "Description", EscapeSpecifiers(description))
	f.Set("Service", "Type", "oneshot")
	line, err := ExecLine(argv)
	if err != nil {
		t.Fatal(err)
	}
	f.Set("Service", "ExecStart", line)
	for i, v := range verifyEnv {
		q, err := QuoteEnv(fmt.Sprintf("V%d", i), v)
		if err != nil {
			t.Fatal(err)
		}
		f.Set("Service", "Environment", q)
	}
	data, err := f.Bytes()
	if err != nil {
		t.Fatal(err)
	}

	if out, err := verify(t, data, false); out != "" || err != nil {
		t.Fatalf("systemd-analyze verify reports a problem: %v\n%s\nunit file:\n%s", err, out, data)
	}

	dump, err := verify(t, data, true)
	if err != nil {
		t.Fatalf("systemd-analyze verify (debug): %v", err)
	}
	if !strings.Contains(dump, "\tDescription: "+description+"\n") {
		t.Errorf("systemd read another description than %q:\n%s", description, dump)
	}
	for i, v := range verifyEnv {
		if want := fmt.Sprintf("\tEnvironment: V%d=%s\n", i, v); !strings.Contains(dump, want) {
			t.Errorf("systemd did not read V%d=%q", i, v)
		}
	}
	_, cmdline, ok := strings.Cut(dump, "\tCommand Line: ")
	if !ok {
		t.Fatalf("no command line in the dump:\n%s", dump)
	}
	cmdline, _, _ = strings.Cut(cmdline, "\n")
	got, err := unquoteCommandLine(cmdline)
	if err != nil {
		t.Fatalf("reading systemd's command line %q: %v", cmdline, err)
	}
	want := make([]string, len(argv))
	for i, a := range argv {
		want[i] = strings.ReplaceAll(a, "$", "$$")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("systemd parsed argv\n%q\nwant\n%q", got, want)
	}
}

// TestVerifyReports shows that the check in TestVerify can fail: for each
// of these unit files systemd-analyze verify reports a problem. Several
// are what the package refuses to produce, written by hand.
func TestVerifyReports(t *testing.T) {
	lookPath(t, "systemd-analyze")
	dollar := executable(t, "a$b")
	tests := []struct{ name, unit string }{
		{"unknown escape", "[Service]\nExecStart=\"/bin/true\" \"\\q\"\n"},
		{"unbalanced quote", "[Service]\nExecStart=\"/bin/true\" \"open\n"},
		{"unknown specifier", "[Service]\nExecStart=\"/bin/true\" \"%z\"\n"},
		{"missing executable", "[Service]\nExecStart=\"/nonexistent/x\"\n"},
		{"'$' in the executable path", "[Service]\nExecStart=" + QuoteArg(dollar) + "\n"},
		{"raw non-UTF-8", "[Unit]\nDescription=\xff\n[Service]\nExecStart=/bin/true\n"},
		{"non-UTF-8 environment value", "[Service]\nExecStart=/bin/true\nEnvironment=\"A=\\xff\"\n"},
		{"bad environment name", "[Service]\nExecStart=/bin/true\nEnvironment=\"1A=b\"\n"},
		{"unknown key", "[Service]\nExecStart=/bin/true\nBogus=1\n"},
		{"carriage return", "[Unit]\nDescription=a\rb\n[Service]\nExecStart=/bin/true\n"},
		{"continuation", "[Unit]\nDescription=a\\\n[Service]\nExecStart=/bin/true\n"},
		{"no ExecStart", "[Service]\nType=oneshot\n"},
		{"line too long", "[Unit]\nDescription=" + strings.Repeat("x", maxLine-len("Description=")) + "\n[Service]\nExecStart=/bin/true\n"},
	}
	for _, tt := range tests {
		if out, err := verify(t, []byte(tt.unit), false); out == "" && err == nil {
			t.Errorf("%s: systemd-analyze verify reports no problem in\n%s", tt.name, tt.unit)
		}
	}
}

// TestVerifyValueRules shows why File.Bytes refuses values with white space
// at either end: systemd reads them stripped.
func TestVerifyValueRules(t *testing.T) {
	lookPath(t, "systemd-analyze")
	for _, v := range []string{" x", "x ", "\tx", "x\t"} {
		dump, err := verify(t, []byte("[Unit]\nDescription="+v+"\n[Service]\nExecStart=/bin/true\n"), true)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(dump, "\tDescription: x\n") {
			t.Errorf("Description=%q: systemd did not read %q:\n%s", v, "x", dump)
		}
	}
}

// unquoteCommandLine reverses systemd's quote_command_line, with which
// systemd-analyze prints a command line: words are separated by one space;
// a word is either bare or in double quotes, where \a \b \f \n \r \t \v,
// \ followed by one of \"'`$, and \NNN (octal) are escapes.
func unquoteCommandLine(s string) ([]string, error) {
	var words []string
	for s != "" {
		if s[0] != '"' {
			w, rest, _ := strings.Cut(s, " ")
			words, s = append(words, w), rest
			continue
		}
		var w []byte
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] != '\\' {
				w = append(w, s[i])
				continue
			}
			i++
			switch {
			case i >= len(s):
				return nil, errors.New("trailing backslash")
			case strings.IndexByte("abfnrtv", s[i]) >= 0:
				w = append(w, "\a\b\f\n\r\t\v"[strings.IndexByte("abfnrtv", s[i])])
			case strings.IndexByte("\\\"'`$", s[i]) >= 0:
				w = append(w, s[i])
			case i+2 < len(s):
				n, err := strconv.ParseUint(s[i:i+3], 8, 8)
				if err != nil {
					return nil, fmt.Errorf("bad escape %q", s[i-1:i+3])
				}
				w = append(w, byte(n))
				i += 2
			default:
				return nil, fmt.Errorf("bad escape at %d", i)
			}
		}
		if i >= len(s) {
			return nil, errors.New("unterminated quote")
		}
		words = append(words, string(w))
		s = strings.TrimPrefix(s[i+1:], " ")
	}
	return words, nil
}
