package pod

import (
	"bytes"
	"html"
	"os/exec"
	"strings"
	"testing"
)

func TestDiagramGolden(t *testing.T) {
	nodes := Nodes(mustLoad(t, "two-apps.yaml"))
	for format, file := range map[string]string{"dot": "two-apps.dot", "mermaid": "two-apps.mmd"} {
		t.Run(format, func(t *testing.T) {
			got, err := Diagram(nodes, format)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, file, got)
		})
	}
}

func TestDiagramUnknownFormat(t *testing.T) {
	_, err := Diagram(nil, "svg")
	if err == nil || err.Error() != `diagram format "svg": must be dot or mermaid` {
		t.Errorf("Diagram(nil, svg) = %v", err)
	}
}

// TestDiagramGraphviz checks that Graphviz reads every golden pod's
// diagram, backslashes in unit names included.
func TestDiagramGraphviz(t *testing.T) {
	bin, err := exec.LookPath("dot")
	if err != nil {
		t.Skipf("Graphviz is not installed (%v): the dot diagrams are not checked", err)
	}
	for _, c := range renderCases {
		data, err := Diagram(Nodes(mustLoad(t, c.manifest)), "dot")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-Tsvg")
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: dot: %v\n%s", c.manifest, err, out)
			continue
		}
		// Graphviz drops a backslash it reads as an escape; the drawn
		// text must be the unit's name.
		slice := SliceUnit(mustLoad(t, c.manifest).Name)
		if !strings.Contains(html.UnescapeString(string(out)), ">"+slice+"<") {
			t.Errorf("%s: Graphviz did not draw the label %s:\n%s", c.manifest, slice, out)
		}
	}
}
