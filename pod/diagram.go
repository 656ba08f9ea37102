package pod

import (
	"bytes"
	"fmt"
	"strings"
)

// Diagram draws a pod's unit graph, as Nodes returns it, in format "dot"
// (Graphviz) or "mermaid" (a Mermaid flowchart). Every unit is a node; units
// outside the graph that it depends on, such as shutdown.target, are drawn
// dashed (dot) or rounded (mermaid); the services of the pod's slice are
// grouped in a box labelled Slice=NAME; an arrow goes from a unit to each
// unit it depends on, labelled with the kinds of those dependencies in the
// order declared ("Wants, After").
func Diagram(nodes []Node, format string) ([]byte, error) {
	var d diagram
	switch format {
	case "dot":
		d = dot{}
	case "mermaid":
		d = mermaid{}
	default:
		return nil, fmt.Errorf("diagram format %q: must be dot or mermaid", format)
	}

	ids := make(map[string]string)
	for i, n := range nodes {
		ids[n.Name] = fmt.Sprintf("n%d", i)
	}
	var external []string
	for _, n := range nodes {
		for _, dep := range n.Deps {
			if _, ok := ids[dep.Unit]; !ok {
				ids[dep.Unit] = fmt.Sprintf("x%d", len(external))
				external = append(external, dep.Unit)
			}
		}
	}

	var b bytes.Buffer
	d.begin(&b)
	var slice string
	var members []string
	for _, n := range nodes {
		if n.Slice == "" {
			d.node(&b, ids[n.Name], n.Name, false)
			continue
		}
		slice = n.Slice
		members = append(members, n.Name)
	}
	if members != nil {
		d.beginGroup(&b, "Slice="+slice)
		for _, m := range members {
			// A node inside the group is indented once more.
			b.WriteString(d.indent())
			d.node(&b, ids[m], m, false)
		}
		d.endGroup(&b)
	}
	for _, u := range external {
		d.node(&b, ids[u], u, true)
	}
	for _, n := range nodes {
		var to []string
		kinds := make(map[string][]string)
		for _, dep := range n.Deps {
			if kinds[dep.Unit] == nil {
				to = append(to, dep.Unit)
			}
			kinds[dep.Unit] = append(kinds[dep.Unit], string(dep.Kind))
		}
		for _, u := range to {
			d.edge(&b, ids[n.Name], ids[u], strings.Join(kinds[u], ", "))
		}
	}
	d.end(&b)
	return b.Bytes(), nil
}

// A diagram writes one diagram language.
type diagram interface {
	begin(b *bytes.Buffer)
	node(b *bytes.Buffer, id, label string, external bool)
	beginGroup(b *bytes.Buffer, label string)
	indent() string // one level of indentation
	endGroup(b *bytes.Buffer)
	edge(b *bytes.Buffer, from, to, label string)
	end(b *bytes.Buffer)
}

// dot writes Graphviz.
type dot struct{}

// dotQuote quotes s as a Graphviz string; in labels a backslash starts an
// escape, so it is doubled.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func (dot) begin(b *bytes.Buffer) {
	b.WriteString("digraph units {\n\tnode [shape=box, fontname=\"monospace\"];\n\tedge [fontname=\"monospace\", fontsize=10];\n")
}

func (dot) node(b *bytes.Buffer, id, label string, external bool) {
	style := ""
	if external {
		style = `, style="rounded,dashed"`
	}
	fmt.Fprintf(b, "\t%s [label=%s%s];\n", id, dotQuote(label), style)
}

func (dot) beginGroup(b *bytes.Buffer, label string) {
	fmt.Fprintf(b, "\tsubgraph cluster_slice {\n\t\tlabel=%s;\n", dotQuote(label))
}

func (dot) indent() string { return "\t" }

func (dot) endGroup(b *bytes.Buffer) { b.WriteString("\t}\n") }

func (dot) edge(b *bytes.Buffer, from, to, label string) {
	fmt.Fprintf(b, "\t%s -> %s [label=%s];\n", from, to, dotQuote(label))
}

func (dot) end(b *bytes.Buffer) { b.WriteString("}\n") }

// mermaid writes a Mermaid flowchart.
type mermaid struct{}

// mermaidQuote quotes s as a Mermaid label.
func mermaidQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, "#quot;") + `"` }

func (mermaid) begin(b *bytes.Buffer) { b.WriteString("flowchart TB\n") }

func (mermaid) node(b *bytes.Buffer, id, label string, external bool) {
	if external {
		fmt.Fprintf(b, "  %s([%s])\n", id, mermaidQuote(label))
		return
	}
	fmt.Fprintf(b, "  %s[%s]\n", id, mermaidQuote(label))
}

func (mermaid) beginGroup(b *bytes.Buffer, label string) {
	fmt.Fprintf(b, "  subgraph slice[%s]\n", mermaidQuote(label))
}

func (mermaid) indent() string { return "  " }

func (mermaid) endGroup(b *bytes.Buffer) { b.WriteString("  end\n") }

func (mermaid) edge(b *bytes.Buffer, from, to, label string) {
	fmt.Fprintf(b, "  %s -->|%s| %s\n", from, label, to)
}

func (mermaid) end(*bytes.Buffer) {}
