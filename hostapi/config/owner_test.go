package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecurityConfigOwner plants config that another user could have
// written: a daemon.toml or drop-in writable by others, an ops dir
// writable by its group, a drop-in owned by another uid. Load refuses
// each, naming the file, so no op of theirs is ever served.
func TestSecurityConfigOwner(t *testing.T) {
	const op = "[[op]]\nname = \"evil\"\nexec = [\"/bin/sh\", \"-c\", \"id\"]\nallow_uids = [65534]\n"
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, main, opsDir string) string // returns the path to be named
		mode  string                                         // the mode the error gives, if any
	}{
		{"daemon.toml writable by others", func(t *testing.T, main, _ string) string {
			os.Chmod(main, 0o666)
			return main
		}, "(mode 0666)"},
		{"drop-in writable by others", func(t *testing.T, _, opsDir string) string {
			p := filepath.Join(opsDir, "evil.toml")
			os.WriteFile(p, []byte(op), 0o600)
			os.Chmod(p, 0o646)
			return p
		}, "(mode 0646)"},
		{"ops dir writable by its group", func(t *testing.T, _, opsDir string) string {
			os.WriteFile(filepath.Join(opsDir, "evil.toml"), []byte(op), 0o600)
			os.Chmod(opsDir, 0o775)
			return opsDir
		}, "(mode 0775)"},
		{"drop-in owned by another uid", func(t *testing.T, _, opsDir string) string {
			p := filepath.Join(opsDir, "evil.toml")
			os.WriteFile(p, []byte(op), 0o600)
			if err := os.Chown(p, 1234, 1234); err != nil {
				t.Skipf("chown needs root: %v", err)
			}
			return p
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			main, opsDir := filepath.Join(dir, "daemon.toml"), filepath.Join(dir, "ops.d")
			os.WriteFile(main, nil, 0o600)
			os.Mkdir(opsDir, 0o755)
			if _, err := Load(main, opsDir); err != nil {
				t.Fatalf("before the plant: %v", err)
			}
			named := tt.plant(t, main, opsDir)
			cfg, err := Load(main, opsDir)
			if err == nil || !strings.Contains(err.Error(), named+": ") || !strings.Contains(err.Error(), tt.mode) {
				t.Errorf("Load: %v (config %v), want an error naming %s %s", err, cfg != nil, named, tt.mode)
			}
		})
	}
}

// TestSecurityConfigSymlinks plants drop-ins that are symlinks: one that
// an operator linked to a root-owned file in a directory a caller owns,
// which the caller then swaps for a link to a job's output log (root's,
// mode 0600, holding the caller's own args, which here make an op that
// runs /bin/sh -c as root); a link straight to the output log; a link,
// owned by a caller, in a sticky directory; a FIFO; and daemon.toml
// linked to the output log. Each is refused, naming the file and what is
// wrong, and no op of the log's is loaded; a link through root's
// directories to a root-owned *.toml file is taken.
func TestSecurityConfigSymlinks(t *testing.T) {
	const evil = "[[op]]\nname = \"evil\"\nexec = [\"/bin/sh\", \"-c\"]\nallow_uids = [65534]\n"
	const benign = "[[op]]\nname = \"agent\"\nexec = [\"/bin/true\"]\n"
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, dir, main, dropIn, outputLog string) (named, want string)
	}{
		{"drop-in linked into a caller's directory, then swapped", func(t *testing.T, dir, _, dropIn, outputLog string) (string, string) {
			home := filepath.Join(dir, "home")
			os.Mkdir(home, 0o755)
			os.WriteFile(filepath.Join(home, "agent.toml"), []byte(benign), 0o644)
			os.Chown(home, 65534, 65534)
			os.Symlink(filepath.Join(home, "agent.toml"), dropIn)
			// The caller, owner of home, replaces the file there.
			os.Remove(filepath.Join(home, "agent.toml"))
			os.Symlink(outputLog, filepath.Join(home, "agent.toml"))
			os.Lchown(filepath.Join(home, "agent.toml"), 65534, 65534)
			return dropIn, "reached through " + home + ", a directory owned by uid 65534"
		}},
		{"drop-in linked into a caller's directory", func(t *testing.T, dir, _, dropIn, _ string) (string, string) {
			home := filepath.Join(dir, "home")
			os.Mkdir(home, 0o755)
			os.WriteFile(filepath.Join(home, "agent.toml"), []byte(evil), 0o644)
			os.Chown(home, 65534, 65534)
			os.Symlink(filepath.Join(home, "agent.toml"), dropIn)
			return dropIn, "reached through " + home + ", a directory owned by uid 65534"
		}},
		{"drop-in linked to a job's output log", func(t *testing.T, _, _, dropIn, outputLog string) (string, string) {
			os.Symlink(outputLog, dropIn)
			return dropIn, "names " + outputLog + ", which is not a *.toml file"
		}},
		{"drop-in linked through a caller's link in a sticky directory", func(t *testing.T, dir, _, dropIn, _ string) (string, string) {
			sticky := filepath.Join(dir, "sticky")
			os.Mkdir(sticky, 0o777)
			os.Chmod(sticky, os.ModeSticky|0o777)
			os.WriteFile(filepath.Join(dir, "real.toml"), []byte(evil), 0o644)
			link := filepath.Join(sticky, "x.toml")
			os.Symlink(filepath.Join(dir, "real.toml"), link)
			os.Lchown(link, 65534, 65534)
			os.Symlink(link, dropIn)
			return dropIn, "reached through " + link + ", a symlink owned by uid 65534"
		}},
		{"drop-in that is a FIFO", func(t *testing.T, _, _, dropIn, _ string) (string, string) {
			if err := syscall.Mkfifo(dropIn, 0o600); err != nil {
				t.Fatal(err)
			}
			return dropIn, "not a regular file"
		}},
		{"daemon.toml linked to a job's output log", func(t *testing.T, _, main, _, outputLog string) (string, string) {
			os.Remove(main)
			os.Symlink(outputLog, main)
			return main, "which is not a *.toml file"
		}},
		{"drop-in linked to root's file through root's directories", func(t *testing.T, dir, _, dropIn, _ string) (string, string) {
			shared := filepath.Join(dir, "shared")
			os.Mkdir(shared, 0o755)
			os.WriteFile(filepath.Join(shared, "agent.toml"), []byte(benign), 0o644)
			os.Symlink(filepath.Join(dir, "shared-link"), dropIn)
			os.Symlink("shared/agent.toml", filepath.Join(dir, "shared-link"))
			return "", ""
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			main, opsDir := filepath.Join(dir, "daemon.toml"), filepath.Join(dir, "ops.d")
			os.WriteFile(main, nil, 0o600)
			os.Mkdir(opsDir, 0o755)
			jobDir := filepath.Join(dir, "state", "jobs", "20261202T142501Z-0123abcd")
			os.MkdirAll(jobDir, 0o700)
			outputLog := filepath.Join(jobDir, "output.log")
			os.WriteFile(outputLog, []byte(evil), 0o600)
			named, want := tt.plant(t, dir, main, filepath.Join(opsDir, "agent.toml"), outputLog)
			done := make(chan struct{})
			var cfg *Config
			var err error
			go func() {
				defer close(done)
				cfg, err = Load(main, opsDir)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Load blocked for 30 s")
			}
			if named == "" {
				if err != nil || len(cfg.Ops) != 1 || cfg.Ops[0].Name != "agent" {
					t.Fatalf("Load: %v, %v: want op agent", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), named+": ") || !strings.Contains(err.Error(), want) {
				t.Errorf("Load: %v (config %v), want an error naming %s: %s", err, cfg != nil, named, want)
			}
		})
	}
}
