// Package docs holds unitrun's documentation. Its test runs every example
// marked runnable, so the docs cannot rot.
//
// A runnable example is a fenced block whose info string is "sh test"; if
// the next fenced block is "output", the example's stdout must equal it.
// Examples run with bash -eu in a fresh directory, with the unitrun binary
// first on PATH, against the test harness's systemd.
package docs

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

func TestMain(m *testing.M) { systemdtest.Main(m) }

type example struct {
	file   string
	line   int
	script string
	output *string
}

// examples returns the runnable examples of a markdown file.
func examples(t *testing.T, path string) []example {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []example
	var cur *strings.Builder
	var info string
	start, n := 0, 0
	expectOutput := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		if cur == nil {
			if rest, ok := strings.CutPrefix(line, "```"); ok {
				info, cur, start = strings.TrimSpace(rest), &strings.Builder{}, n
			} else if strings.TrimSpace(line) != "" {
				expectOutput = false
			}
			continue
		}
		if strings.HasPrefix(line, "```") {
			switch {
			case info == "sh test":
				out = append(out, example{file: filepath.Base(path), line: start, script: cur.String()})
				expectOutput = true
			case info == "output" && expectOutput && len(out) > 0:
				s := cur.String()
				out[len(out)-1].output = &s
				expectOutput = false
			default:
				expectOutput = false
			}
			cur = nil
			continue
		}
		cur.WriteString(line + "\n")
	}
	return out
}

func TestExamples(t *testing.T) {
	files, _ := filepath.Glob("*.md")
	files = append(files, "../README.md")
	bin := filepath.Dir(systemdtest.Binary(t))
	total := 0
	for _, file := range files {
		for _, ex := range examples(t, file) {
			total++
			t.Run(ex.file+":"+itoa(ex.line), func(t *testing.T) {
				cmd := exec.Command("bash", "-euc", ex.script)
				cmd.Dir = t.TempDir()
				cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("%v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, ex.script, stdout.String(), stderr.String())
				}
				if ex.output != nil && stdout.String() != *ex.output {
					t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), *ex.output)
				}
			})
		}
	}
	if total == 0 {
		t.Fatal("no runnable examples found in docs/*.md and README.md")
	}
}

func itoa(n int) string {
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
