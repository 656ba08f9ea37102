package main

import (
	"strings"
	"testing"
	"unicode"
)

// TestSecurityOpJobsTerminal has one caller start a job whose arg holds a
// line break, a carriage return and terminal escapes, then lists the jobs
// and prints the job's record as another caller of the op would: the
// output holds no control character but the line ends, and no row that the
// arg forged.
func TestSecurityOpJobsTerminal(t *testing.T) {
	t.Setenv("UNITRUN_SOCKET", startDaemon(t))
	const forged = "20261202T000000Z-00000000  sh  succeeded  exit status 0  forged"
	arg := "exit 0 # \x1b[2J\x1b[H\r\n" + forged + "\x1b]0;title\x07\u009b2J"
	if _, errs, code := unitrun(t, "op", "call", "sh", arg); code != 0 {
		t.Fatalf("op call: exit %d: %s", code, errs)
	}
	out, errs, code := unitrun(t, "op", "jobs")
	if code != 0 {
		t.Fatalf("op jobs: exit %d: %s", code, errs)
	}
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	_, status, _ := unitrun(t, "op", "status", id)
	for what, text := range map[string]string{"op jobs": out, "op status": status} {
		for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if strings.HasPrefix(line, forged) {
				t.Errorf("%s: line %d is forged: %q", what, i+1, line)
			}
			if j := strings.IndexFunc(line, unicode.IsControl); j >= 0 {
				t.Errorf("%s: line %d holds control character %q: %q", what, i+1, line[j:j+1], line)
			}
		}
	}
	if !strings.Contains(out, `\x1b[2J`) {
		t.Errorf("op jobs does not show the arg, escaped: %q", out)
	}
}
