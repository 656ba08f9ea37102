package main

import (
	"strings"
	"testing"
)

// Listings are aligned tables with a header and colored states on a
// terminal, without color under NO_COLOR or TERM=dumb, and plain
// tab-separated lines when piped.
func TestListingsTerminalAndPiped(t *testing.T) {
	dir := t.TempDir()
	if _, errs, code := podCLI(t, dir, "create", manifestFile(t, "name: listed\napps:\n  - name: a\n    exec: [/bin/true]\n")); code != 0 {
		t.Fatalf("pod create: exit %d: %s", code, errs)
	}
	rmPod(t, dir, "listed")

	out, _, code := podCLI(t, dir, "list")
	if code != 0 || out != "listed\tPending\t-\t1\n" {
		t.Errorf("piped pod list: %q, exit %d; want one plain line", out, code)
	}
	out, _, code = podCLI(t, dir, "status", "listed")
	if code != 0 || out != "listed\tPending\t-\t1\na\twaiting\t-\t0\t-\t-\t-\tno\t-\n" {
		t.Errorf("piped pod status: %q, exit %d; want the pod's line and the app's", out, code)
	}

	out, code = unitrunTTY(t, nil, "pod", "list", "--state-dir", dir)
	want := "POD     PHASE    EXIT  APPS\nlisted  " + yellow + "Pending" + reset + "  -     1\n"
	if code != 0 || out != want {
		t.Errorf("pod list on a terminal:\n%q\nwant\n%q", out, want)
	}
	out, code = unitrunTTY(t, nil, "pod", "status", "--state-dir", dir, "listed")
	if code != 0 || !strings.HasPrefix(out, "pod listed: "+yellow+"Pending"+reset+", exit code -\nAPP  STATE    EXIT  RESTARTS  STARTED  FINISHED  PROBE  READY  IMAGE\na    "+yellow+"waiting"+reset+"  -") {
		t.Errorf("pod status on a terminal:\n%q", out)
	}
	for _, env := range []string{"NO_COLOR=1", "TERM=dumb"} {
		out, code = unitrunTTY(t, []string{env}, "pod", "list", "--state-dir", dir)
		if want := "POD     PHASE    EXIT  APPS\nlisted  Pending  -     1\n"; code != 0 || out != want {
			t.Errorf("pod list on a terminal with %s:\n%q\nwant\n%q", env, out, want)
		}
	}
	out, code = unitrunTTY(t, nil, "manager", "status")
	if code != 0 || !strings.HasPrefix(out, "REACHED  MANAGER") || !strings.Contains(out, green+"yes"+reset) {
		t.Errorf("manager status on a terminal:\n%q", out)
	}
}

// A table pads by visible width, whatever the colors, and keeps every row
// on one line.
func TestTableAlignsColoredCells(t *testing.T) {
	var b strings.Builder
	tt := &term{w: &b, tty: true, color: true}
	tt.table([]string{"ID", "STATE", "NOTE"}, [][]string{{"1", "failed", "x\ty"}, {"22", "weird", ""}}, 1)
	want := "ID  STATE   NOTE\n1   " + red + "failed" + reset + "  x y\n22  weird   \n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	tt.tty = false
	tt.table([]string{"ID", "STATE", "NOTE"}, [][]string{{"1", "failed", "x\ty\nz"}, {"2", "", ""}}, 1)
	if b.String() != "1\tfailed\tx y z\n2\t-\t-\n" {
		t.Errorf("plain table: %q", b.String())
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  string
	}{
		{"abcdef", 0, "abcdef"},
		{"abcdef", 4, "abc"},
		{"ab", 4, "ab"},
		{green + "abcdef" + reset, 4, green + "abc" + reset},
	} {
		if got := cut(c.in, c.width); got != c.want {
			t.Errorf("cut(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}
