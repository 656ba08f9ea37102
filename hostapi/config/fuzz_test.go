package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadConfig feeds arbitrary bytes to Load as daemon.toml: it
// must never panic, and every config it accepts must pass Validate.
func FuzzLoadConfig(f *testing.F) {
	f.Add([]byte(contractTOML))
	f.Add([]byte(op + "args = { min = 1, max = 2, pattern = \"^a\" }\nretry = { attempts = 2, delay = \"1s\" }\n"))
	f.Add([]byte("op = [{ name = \"c\", unit = \"c.service\", request_file = \"/run/c\" }]\n[limits]\nmax_queue = 3\n"))
	f.Add([]byte("[[op]]\nname = \"e\"\nexec = [\"/bin/e\", \"{args}\"]\n[op.args]\nmax = 3\n[op.env]\nA = \"{caller}\"\n"))
	f.Add([]byte("[[op]\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
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
