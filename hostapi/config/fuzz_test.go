package config

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
)

// FuzzLoadConfig feeds arbitrary bytes to Load as daemon.toml: it must
// never panic, and every config it accepts must pass Validate. For every
// document go-toml accepts, scanLines must find a line, within the
// document, for every key and array element that go-toml decodes.
func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte(contractTOML))
	f.Add([]byte(op + "args = { min = 1, max = 2, pattern = \"^a\" }\nretry = { attempts = 2, delay = \"1s\" }\n"))
	f.Add([]byte("op = [{ name = \"c\", unit = \"c.service\", request_file = \"/run/c\" }]\n[limits]\nmax_queue = 3\n"))
	f.Add([]byte("[[op]]\nname = \"e\"\nexec = [\"/bin/e\", \"{args}\"]\n[op.args]\nmax = 3\n[op.env]\nA = \"{caller}\"\n"))
	f.Add([]byte("[[op]\n"))
	f.Add([]byte("[[op]]\nname = \"\"\"a\n\\\"\"\"\"\nexec = ['''/b\n''', \"\\u0041\"]\n'env'.\"B\\tC\" = 1979-05-27 07:32:00\n[[op.x]]\n[ op . x . y ]\nz = [[1], [{a = 2}]]\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		var tree map[string]any
		if toml.Unmarshal(data, &tree) == nil {
			everyValueHasLine(t, scanLines(data), "", tree, bytes.Count(data, []byte("\n"))+1)
		}
		file := filepath.Join(dir, "daemon.toml")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(file, "")
		if err != nil {
			if cfg != nil {
				t.Fatalf("Load returned a config with error %v", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted config does not validate: %v\n%s", err, data)
		}
	})
}

// everyValueHasLine checks that l holds a line from 1 to maxLine for each
// key and array element within v, a value of go-toml's generic tree at p.
func everyValueHasLine(t *testing.T, l lines, p keyPath, v any, maxLine int) {
	t.Helper()
	check := func(c keyPath, e any) {
		if ln, ok := l[c]; !ok || ln < 1 || ln > maxLine {
			t.Fatalf("scanLines: line of %s = %d, %v; want one from 1 to %d", c, ln, ok, maxLine)
		}
		everyValueHasLine(t, l, c, e, maxLine)
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			check(p.key(k), e)
		}
	case []any:
		for i, e := range v {
			check(p.index(i), e)
		}
	}
}
