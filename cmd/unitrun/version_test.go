package main

import (
	debugbuildinfo "debug/buildinfo"
	"encoding/json"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/internal/buildinfo"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestVersion checks that --version and "version" print the version, the
// commit and the Go version recorded in the binary, and exit 0.
func TestVersion(t *testing.T) {
	bi, err := debugbuildinfo.ReadFile(systemdtest.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	info := buildinfo.From(bi)
	want := "unitrun " + info.String() + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, errs, code := unitrun(t, args...)
		if code != 0 || out != want || errs != "" {
			t.Errorf("unitrun %q: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, out, errs, want)
		}
	}
	out, errs, code := unitrun(t, "version", "--json")
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || got != info || got.GoVersion == "" {
		t.Errorf("version --json: exit %d, stdout %q (%v), stderr %q; want 0 and %+v", code, out, err, errs, info)
	}
	// Both forms give one commit: the word after "commit" is the JSON's.
	if text := strings.Fields(want); len(text) < 4 || text[3] != got.Commit {
		t.Errorf("version: %q, version --json commit %q; want one commit in both", want, got.Commit)
	}
}
