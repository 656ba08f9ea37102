package config

import (
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// opPos says on which lines the keys of one op (or of [limits]) are
// written, so that errors found after decoding can name a line.
type opPos struct {
	header int            // line of the [[op]] header or of the op's inline table
	keys   map[string]int // key path relative to the op, such as "args.max"
}

// line returns the line of key, else of its nearest parent key written,
// else of the header.
func (o *opPos) line(key string) int {
	for key != "" {
		if l, ok := o.keys[key]; ok {
			return l
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return o.header
}

// set records the line of rel and of each of its parents not yet seen.
func (o *opPos) set(rel []string, line int) {
	if o.keys == nil {
		o.keys = make(map[string]int)
	}
	for i := 1; i <= len(rel); i++ {
		k := strings.Join(rel[:i], ".")
		if _, ok := o.keys[k]; !ok {
			o.keys[k] = line
		}
	}
}

// setKeyValue records the key-value kv, whose key extends rel, and the
// keys of an inline table it holds.
func (o *opPos) setKeyValue(p *unstable.Parser, rel []string, kv *unstable.Node) {
	rel = append(rel[:len(rel):len(rel)], keyPath(kv)...)
	o.set(rel, keyLine(p, kv))
	o.setInline(p, rel, kv.Value())
}

// setInline records the keys of v, found at rel, when v is an inline table.
func (o *opPos) setInline(p *unstable.Parser, rel []string, v *unstable.Node) {
	if v.Kind != unstable.InlineTable {
		return
	}
	it := v.Children()
	for it.Next() {
		if c := it.Node(); c.Kind == unstable.KeyValue {
			o.setKeyValue(p, rel, c)
		}
	}
}

// filePos holds the positions of one file's ops, in the order go-toml
// decodes them, and of its [limits] keys (as "limits.<key>").
type filePos struct {
	ops    []opPos
	limits opPos
}

func (f *filePos) op(i int) opPos {
	if i < len(f.ops) {
		return f.ops[i]
	}
	return opPos{}
}

func (f *filePos) limitsLine(key string) int {
	return f.limits.line(key)
}

// target returns the positions a key path under a table header belongs to
// and the path relative to it; nil for paths outside op and limits.
func (f *filePos) target(path []string, line int) (*opPos, []string) {
	switch {
	case len(path) > 0 && path[0] == "op":
		if len(f.ops) == 0 {
			f.ops = append(f.ops, opPos{header: line})
		}
		return &f.ops[len(f.ops)-1], path[1:]
	case len(path) > 0 && path[0] == "limits":
		return &f.limits, path
	}
	return nil, nil
}

// scanPositions finds the lines of the ops and keys of a document that
// go-toml has already decoded without error.
func scanPositions(data []byte) filePos {
	var f filePos
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyPath(e)
			line := keyLine(&p, e)
			switch {
			case len(table) == 1 && table[0] == "op":
				f.ops = append(f.ops, opPos{header: line})
			case len(table) == 1 && table[0] == "limits":
				f.limits.header = line
			default:
				if o, rel := f.target(table, line); o != nil {
					o.set(rel, line)
				}
			}
		case unstable.KeyValue:
			path := append(table[:len(table):len(table)], keyPath(e)...)
			if len(path) == 1 && path[0] == "op" && e.Value().Kind == unstable.Array {
				f.scanInlineOps(&p, e.Value())
				continue
			}
			line := keyLine(&p, e)
			if o, rel := f.target(path, line); o != nil {
				o.set(rel, line)
				o.setInline(&p, rel, e.Value())
			}
		}
	}
	return f
}

// scanInlineOps records the ops of op = [{...}, ...].
func (f *filePos) scanInlineOps(p *unstable.Parser, array *unstable.Node) {
	it := array.Children()
	for it.Next() {
		n := it.Node()
		if n.Kind != unstable.InlineTable {
			continue
		}
		f.ops = append(f.ops, opPos{header: p.Shape(n.Raw).Start.Line})
		f.ops[len(f.ops)-1].setInline(p, nil, n)
	}
}

// keyPath returns the parts of the key of a table header or key-value.
func keyPath(n *unstable.Node) []string {
	var parts []string
	it := n.Key()
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// keyLine returns the line on which the key of n starts.
func keyLine(p *unstable.Parser, n *unstable.Node) int {
	it := n.Key()
	if !it.Next() {
		return 0
	}
	return p.Shape(it.Node().Raw).Start.Line
}
