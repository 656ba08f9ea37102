package config

import (
	"testing"

	toml "github.com/pelletier/go-toml/v2"
)

// at returns the path of parts: a string is a key, an int an index.
func at(parts ...any) keyPath {
	var p keyPath
	for _, part := range parts {
		switch part := part.(type) {
		case string:
			p = p.key(part)
		case int:
			p = p.index(part)
		}
	}
	return p
}

func TestScanLines(t *testing.T) {
	const doc = "# a comment [[op]] = \"\n" + // 1
		"[[op]]\n" + // 2
		"name = \"a\" # [[op]]\n" + // 3
		"exec = [\"/bin/a\", '''x\n" + // 4
		"y''', \"\"\"b\n" + // 5
		"\\\"\"\"\"\", \"c\"]\n" + // 6: an escaped quote, a quote just before the closing ones
		"args = { min = 0,\n" + // 7
		"  max = 2, pattern = '^[{]' }\n" + // 8
		"\"env\".\"A\\u0042\" = \"1\"\n" + // 9
		"env . 'C.D' = \"2\"\n" + // 10
		"[op.retry]\n" + // 11
		"attempts = 3\n" + // 12
		"\r\n" + // 13
		"[[ op ]]\n" + // 14
		"name = \"b\"\n" + // 15
		"when = 1979-05-27 07:32:00\n" + // 16
		"nested = [[1, 2], [\n" + // 17
		"  3]]\n" + // 18
		"[op.args]\n" + // 19
		"max = 1\n" + // 20
		"[limits]\n" + // 21
		"max_queue = 1\n" // 22
	l := scanLinesWant(t, doc, []lineWant{
		{at("op"), 2},
		{at("op", 0), 2},
		{at("op", 0, "name"), 3},
		{at("op", 0, "exec"), 4},
		{at("op", 0, "exec", 1), 4},
		{at("op", 0, "exec", 2), 5},
		{at("op", 0, "exec", 3), 6},
		{at("op", 0, "args"), 7},
		{at("op", 0, "args", "min"), 7},
		{at("op", 0, "args", "max"), 8},
		{at("op", 0, "args", "pattern"), 8},
		{at("op", 0, "env"), 9},
		{at("op", 0, "env", "AB"), 9},
		{at("op", 0, "env", "C.D"), 10},
		{at("op", 0, "retry"), 11},
		{at("op", 0, "retry", "attempts"), 12},
		{at("op", 1), 14},
		{at("op", 1, "name"), 15},
		{at("op", 1, "when"), 16},
		{at("op", 1, "nested", 1, 0), 18},
		{at("op", 1, "args"), 19},
		{at("op", 1, "args", "max"), 20},
		{at("limits"), 21},
		{at("limits", "max_queue"), 22},
	})
	if got := l.line(at("op", 0), "args.pattern.x"); got != 8 {
		t.Errorf("line of args.pattern.x in op 0 = %d, want 8 (that of args.pattern)", got)
	}
	if got := l.line(at("op", 1), "timeout"); got != 14 {
		t.Errorf("line of timeout in op 1 = %d, want 14 (that of the op)", got)
	}
}

// TestScanLinesInlineOps finds each op of op = [...] at the start of its
// inline table.
func TestScanLinesInlineOps(t *testing.T) {
	const doc = "op = [\n  { name = \"a\" },\n\n  {\n    name = \"b\", env = { X = \"}\" } }, # }\n  {}]\n"
	scanLinesWant(t, doc, []lineWant{
		{at("op"), 1},
		{at("op", 0), 2},
		{at("op", 0, "name"), 2},
		{at("op", 1), 4},
		{at("op", 1, "name"), 5},
		{at("op", 1, "env", "X"), 5},
		{at("op", 2), 6},
	})
}

type lineWant struct {
	at   keyPath
	want int
}

// scanLinesWant scans doc, which must be TOML, checks the lines of want
// and returns the lines.
func scanLinesWant(t *testing.T, doc string, want []lineWant) lines {
	t.Helper()
	if err := toml.Unmarshal([]byte(doc), new(map[string]any)); err != nil {
		t.Fatal(err)
	}
	l := scanLines([]byte(doc))
	for _, w := range want {
		if got, ok := l[w.at]; !ok || got != w.want {
			t.Errorf("line of %s = %d, %v; want %d", w.at, got, ok, w.want)
		}
	}
	return l
}
