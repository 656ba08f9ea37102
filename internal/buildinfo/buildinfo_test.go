package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "(devel) commit unknown "},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "5d0c1e"}, {Key: "vcs.modified", Value: "false"}}},
			"v1.2.0 commit 5d0c1e go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "5d0c1e"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) commit 5d0c1e (modified) go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8"}, "(devel) commit unknown go1.26.8"},
	} {
		want := tc.want
		if tc.bi == nil {
			want += From(nil).GoVersion
		}
		if got := From(tc.bi).String(); got != want {
			t.Errorf("%+v: %q, want %q", tc.bi, got, want)
		}
		// The commit of the JSON form is the one the text names.
		if got := From(tc.bi).Commit; !strings.Contains(want, " commit "+got+" ") {
			t.Errorf("%+v: commit %q, not the one of %q", tc.bi, got, want)
		}
	}
}
