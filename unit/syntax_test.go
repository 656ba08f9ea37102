package unit

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// nastyArgs are arguments that the quoting must carry through exactly; the
// systemd-analyze tests use them too.
var nastyArgs = []string{
	"",
	"plain",
	"two words",
	"  leading and trailing  ",
	`"double" 'single'`,
	`back\slash \\ \n \x41 \`,
	"%h %% %n %i %",
	"$VAR ${VAR} $$ $ $1 ${",
	"$HOME",
	";",
	`\;`,
	"new\nline",
	"tab\there",
	"cr\rlf",
	"bell\a esc\x1b del\x7f",
	"é 日本 \u2028",
	"\xff\xfe",
	"a\xc3",
	"#comment ;semi",
	"=equals=",
	"-dash",
	"@at :colon +plus !bang",
	"\ufffd",
}

func TestQuoteArg(t *testing.T) {
	tests := []struct{ in, out string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"two words", `"two words"`},
		{`a"b`, `"a\"b"`},
		{`a'b`, `"a'b"`},
		{`a\b`, `"a\\b"`},
		{"a\nb\tc", `"a\nb\tc"`},
		{"\r\a\x01\x1f\x7f", `"\x0d\x07\x01\x1f\x7f"`},
		{"%h%%", `"%%h%%%%"`},
		{"$VAR ${VAR} $$", `"$$VAR $${VAR} $$$$"`},
		{"é日本", `"é日本"`},
		{"\xff\xfe", `"\xff\xfe"`},
		{"a\xc3", `"a\xc3"`},
		{"\x00", `"\x00"`},
		{";", `";"`},
	}
	for _, tt := range tests {
		if got := QuoteArg(tt.in); got != tt.out {
			t.Errorf("QuoteArg(%q) = %s, want %s", tt.in, got, tt.out)
		}
	}
	for _, s := range nastyArgs {
		got, err := parseCommandLine(QuoteArg(s))
		if err != nil || len(got) != 1 || got[0] != s {
			t.Errorf("parseCommandLine(QuoteArg(%q)) = %q, %v", s, got, err)
		}
	}
}

func TestExecLine(t *testing.T) {
	tests := []struct {
		argv []string
		line string
		err  string
	}{
		{[]string{"/bin/echo"}, `"/bin/echo"`, ""},
		{[]string{"/bin/echo", "a b", "", "%h", "$X"}, `"/bin/echo" "a b" "" "%%h" "$$X"`, ""},
		{[]string{"/opt/my app/100%/é\xff"}, `"/opt/my app/100%%/é\xff"`, ""},
		{nil, "", "exec line: empty argv"},
		{[]string{}, "", "exec line: empty argv"},
		{[]string{"echo"}, "", `exec line: argv[0] "echo": not an absolute path`},
		{[]string{""}, "", "not an absolute path"},
		{[]string{"/bin/"}, "", "names a directory"},
		{[]string{"/bin/echo", "a\x00b"}, "", `exec line: argv[1] "a\x00b": contains a NUL byte`},
		{[]string{"/bin/\x00"}, "", "argv[0]"},
		{[]string{"/bin/e$cho"}, "", "character '$' not allowed"},
		{[]string{`/bin/e"cho`}, "", `character '"' not allowed`},
		{[]string{`/bin/e'cho`}, "", `character '\'' not allowed`},
		{[]string{`/bin/e\cho`}, "", `character '\\' not allowed`},
		{[]string{"/bin/e\ncho"}, "", `character '\n' not allowed`},
		{[]string{"/bin/e\x7fcho"}, "", `character '\x7f' not allowed`},
		{[]string{"/" + strings.Repeat("x", 256)}, "", "is 256 bytes long (max 255)"},
		{[]string{strings.Repeat("/x", 2048)}, "", "4096 bytes long (max 4095)"},
	}
	for _, tt := range tests {
		line, err := ExecLine(tt.argv)
		if tt.err == "" {
			if err != nil || line != tt.line {
				t.Errorf("ExecLine(%q) = %s, %v, want %s", tt.argv, line, err, tt.line)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ExecLine(%q) = %s, %v, want an error containing %q", tt.argv, line, err, tt.err)
		}
	}
	argv := append([]string{"/usr/bin/env"}, nastyArgs...)
	line, err := ExecLine(argv)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := parseCommandLine(line); err != nil || !reflect.DeepEqual(got, argv) {
		t.Errorf("parseCommandLine(ExecLine(%q)) = %q, %v", argv, got, err)
	}
}

func TestQuoteEnv(t *testing.T) {
	tests := []struct {
		key, value, out, err string
	}{
		{"A", "b", `"A=b"`, ""},
		{"_x1", "", `"_x1="`, ""},
		{"PATH", "/usr/bin:/bin", `"PATH=/usr/bin:/bin"`, ""},
		{"A", "two words", `"A=two words"`, ""},
		{"A", `q"uo'te\`, `"A=q\"uo'te\\"`, ""},
		{"A", "%h %%", `"A=%%h %%%%"`, ""},
		{"A", "$HOME ${X}", `"A=$HOME ${X}"`, ""},
		{"A", "multi\nline\ttab\r", `"A=multi\nline\ttab\x0d"`, ""},
		{"A", "é", `"A=é"`, ""},
		{"A", "x=y", `"A=x=y"`, ""},
		{"", "v", "", `environment variable name "": must match [A-Za-z_][A-Za-z0-9_]*`},
		{"1A", "v", "", `environment variable name "1A": must match`},
		{"A-B", "v", "", "must match"},
		{"A=B", "v", "", "must match"},
		{"A B", "v", "", "must match"},
		{"É", "v", "", "must match"},
		{"A", "a\x00b", "", "environment variable A: value contains a NUL byte"},
		{"A", "\xff\xfe", "", "environment variable A: value is not valid UTF-8"},
	}
	for _, tt := range tests {
		out, err := QuoteEnv(tt.key, tt.value)
		if tt.err == "" {
			if err != nil || out != tt.out {
				t.Errorf("QuoteEnv(%q, %q) = %s, %v, want %s", tt.key, tt.value, out, err, tt.out)
			}
			if words, err := parseEnvironment(out); err != nil || len(words) != 1 || words[0] != tt.key+"="+tt.value {
				t.Errorf("parseEnvironment(%s) = %q, %v", out, words, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("QuoteEnv(%q, %q) = %s, %v, want an error containing %q", tt.key, tt.value, out, err, tt.err)
		}
	}
}

func TestEscapeSpecifiers(t *testing.T) {
	tests := []struct{ in, out string }{
		{"", ""},
		{"no specifiers", "no specifiers"},
		{"%h", "%%h"},
		{"100% %% done", "100%% %%%% done"},
		{"$X \\ \"", "$X \\ \""},
	}
	for _, tt := range tests {
		if got := EscapeSpecifiers(tt.in); got != tt.out {
			t.Errorf("EscapeSpecifiers(%q) = %q, want %q", tt.in, got, tt.out)
		}
		if got, err := expandSpecifiers(EscapeSpecifiers(tt.in)); err != nil || got != tt.in {
			t.Errorf("expandSpecifiers(EscapeSpecifiers(%q)) = %q, %v", tt.in, got, err)
		}
	}
}

// splitWordsTests are checked here and against systemd's extract_first_word
// in oracle_test.go.
var splitWordsTests = []struct {
	in        string
	cunescape bool
	words     []string
	err       bool
}{
	{"", false, nil, false},
	{"  \t\n ", false, nil, false},
	{"a b  c", false, []string{"a", "b", "c"}, false},
	{`"a b" 'c d'`, false, []string{"a b", "c d"}, false},
	{`x"a b"y'c'`, false, []string{"xa byc"}, false},
	{`"" ''`, false, []string{"", ""}, false},
	{`"it's" 'say "hi"'`, false, []string{"it's", `say "hi"`}, false},
	{`a\ b \" \\ \x41`, false, []string{"a b", `"`, `\`, "x41"}, false},
	{`"a\"b"`, false, []string{`a"b`}, false},
	{`"unbalanced`, false, nil, true},
	{`'unbalanced`, false, nil, true},
	{`trailing\`, false, nil, true},
	{`"trailing\`, false, nil, true},
	{`\x41 "\n\t\\\"\'" \s`, true, []string{"A", "\n\t\\\"'", " "}, false},
	{`\a\b\f\r\v`, true, []string{"\a\b\f\r\v"}, false},
	{`"\xff\xFE" \101\177\377`, true, []string{"\xff\xfe", "A\x7f\xff"}, false},
	{`\u00e9 \u65e5 \U0001F600`, true, []string{"é", "日", "😀"}, false},
	{`\ud800`, true, []string{"\xed\xa0\x80"}, false},
	{`\x00`, true, nil, true},
	{`\000`, true, nil, true},
	{`\400`, true, nil, true},
	{`\u0000`, true, nil, true},
	{`\U0000d800`, true, nil, true},
	{`\U00110000`, true, nil, true},
	{`\x4`, true, nil, true},
	{`\q`, true, nil, true},
	{`a\ b`, true, nil, true},
	{`\;`, true, nil, true},
}

func TestSplitWords(t *testing.T) {
	for _, tt := range splitWordsTests {
		words, err := splitWords(tt.in, tt.cunescape)
		if (err != nil) != tt.err || !reflect.DeepEqual(words, tt.words) {
			t.Errorf("splitWords(%q, %v) = %q, %v, want %q (error: %v)", tt.in, tt.cunescape, words, err, tt.words, tt.err)
		}
	}
}

// parseCommandLine reads a command line as systemd's config_parse_exec
// reads ExecStart= (with no prefix characters) and then runs it: it splits
// and unquotes the words like extract_first_word with
// EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE, expands specifiers in each word, and
// then replaces variables, with an empty environment. It fails on anything
// QuoteArg should never produce: a word that starts as a command separator
// (";" or "\;" followed by white space), a specifier other than "%%", or a
// '$' other than "$$".
func parseCommandLine(line string) ([]string, error) {
	var words []string
	for c := (cursor{s: line}); ; {
		rest, _ := c.rest()
		if rest = strings.TrimPrefix(trimLeftWhitespace(rest), `\`); strings.HasPrefix(rest, ";") && (len(rest) == 1 || isWhitespace(rest[1])) {
			return nil, errors.New("command separator")
		}
		w, ok, err := c.extractWord(whitespace, xUnquote|xCunescape)
		if err != nil {
			return nil, err
		}
		if !ok {
			return words, nil
		}
		if w, err = expandSpecifiers(w); err != nil {
			return nil, err
		}
		if w, err = replaceVariables(w); err != nil {
			return nil, err
		}
		words = append(words, w)
	}
}

// parseEnvironment reads the value of Environment= as systemd does: words
// as in parseCommandLine, with specifiers expanded but no variables.
func parseEnvironment(value string) ([]string, error) {
	words, err := splitWords(value, true)
	if err != nil {
		return nil, err
	}
	for i, w := range words {
		if words[i], err = expandSpecifiers(w); err != nil {
			return nil, err
		}
	}
	return words, nil
}

// expandSpecifiers is systemd's specifier_printf with no specifiers but
// "%%": a lone '%' at the end stands for itself.
func expandSpecifiers(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '%':
			b.WriteByte(s[i])
		case i+1 == len(s):
			b.WriteByte('%')
		case s[i+1] == '%':
			b.WriteByte('%')
			i++
		default:
			return "", errors.New("specifier %" + s[i+1:i+2] + " would be expanded")
		}
	}
	return b.String(), nil
}

// replaceVariables is systemd's replace_env_argv for one word: "$$" stands
// for '$'; any other '$' would start a variable.
func replaceVariables(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '$':
			b.WriteByte(s[i])
		case i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		default:
			return "", errors.New("unescaped $ would be substituted")
		}
	}
	return b.String(), nil
}

// FuzzQuoteArg checks that every string without NUL comes back exactly
// from a command line of QuoteArg words, alone and next to others, and
// from a QuoteEnv assignment if it is valid UTF-8.
func FuzzQuoteArg(f *testing.F) {
	for _, s := range nastyArgs {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			if _, err := ExecLine([]string{"/bin/x", s}); err == nil {
				t.Fatalf("ExecLine accepted NUL in %q", s)
			}
			return
		}
		got, err := parseCommandLine(QuoteArg(s))
		if err != nil || len(got) != 1 || got[0] != s {
			t.Fatalf("parseCommandLine(QuoteArg(%q)) = %q, %v", s, got, err)
		}
		argv := []string{"/bin/x", s, "", s + s}
		line, err := ExecLine(argv)
		if err != nil {
			t.Fatalf("ExecLine(%q): %v", argv, err)
		}
		if got, err := parseCommandLine(line); err != nil || !reflect.DeepEqual(got, argv) {
			t.Fatalf("parseCommandLine(ExecLine(%q)) = %q, %v", argv, got, err)
		}
		if q, err := QuoteEnv("K", s); err == nil {
			if got, err := parseEnvironment(q); err != nil || len(got) != 1 || got[0] != "K="+s {
				t.Fatalf("parseEnvironment(QuoteEnv(K, %q)) = %q, %v", s, got, err)
			}
		}
	})
}
