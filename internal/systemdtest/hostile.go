package systemdtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// injections are strings that would add a setting, a section, a command
// or a specifier if they reached a unit file, a command line or a shell
// unescaped, or that a terminal would act on; @P@ is a path prefix.
var injections = []string{
	"x\nExecStopPost=/usr/bin/touch @P@.stoppost",
	"x\n[Service]\nExecStopPost=/usr/bin/touch @P@.section",
	"\r\nExecStartPre=/usr/bin/touch @P@.cr",
	"x\\\nExecStopPost=/usr/bin/touch @P@.cont",
	"x\\",
	"%n %h %% %",
	"$HOME ${HOME} $$ $",
	`"; /usr/bin/touch @P@.dq; "`,
	`'; /usr/bin/touch @P@.sq; '`,
	"; /usr/bin/touch @P@.semi",
	"`/usr/bin/touch @P@.bq` $(/usr/bin/touch @P@.sub)",
	"\\x0a\\nExecStopPost=/usr/bin/touch @P@.esc",
	"\x1b[2J\x1b]0;title\x07",
	"",
	"{args}",
	"{caller}",
}

// Hostile returns strings that attack unit files, command lines, shells
// and terminals, each of whose injected commands would create a file
// named "pwned..." in dir (see NoPwned). None holds a NUL.
func Hostile(dir string) []string {
	out := make([]string, len(injections))
	for i, s := range injections {
		out[i] = strings.ReplaceAll(s, "@P@", filepath.Join(dir, "pwned"))
	}
	return out
}

// NoPwned fails the test for each file of dir whose name starts with
// "pwned": an injected command ran.
func NoPwned(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "pwned") {
			t.Errorf("%s exists: an injected command ran", filepath.Join(dir, e.Name()))
		}
	}
}
