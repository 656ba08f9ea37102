package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"
)

// A config file is decoded in two steps: go-toml reads the document into a
// generic tree (maps, slices and scalars), reporting broken TOML; then
// decoder sets the file schema (fileConfig, fileDropIn) from the tree,
// reporting each key the schema lacks and each value of the wrong type in
// terms of the schema's struct tags. So every error but broken TOML is the
// package's own, placed at its line by scanLines.

// syntaxErrors returns go-toml's error for a document that is not TOML,
// at its line.
func syntaxErrors(file string, err error) []*Error {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return []*Error{{File: file, Rule: err.Error()}}
	}
	line, _ := de.Position()
	return []*Error{{File: file, Line: line, Key: strings.Join(de.Key(), "."), Rule: strings.TrimPrefix(de.Error(), "toml: ")}}
}

// A decoder sets values of the file schema from a document's generic tree.
type decoder struct {
	file  string
	lines lines
	// other, when set, is the schema of daemon.toml while a drop-in is
	// decoded, so that a key only daemon.toml may set is named so.
	other reflect.Type
	errs  []*Error
	// wrong are the values of the wrong type, which decode left unset;
	// unknown the keys the schema lacks.
	wrong   []node
	unknown []unknownKey
}

// An unknownKey is a key the schema lacks, at at, with the names (as a
// rule gives them) of the keys of its table that are not written: those
// it may be the misspelling of.
type unknownKey struct {
	at    keyPath
	unset []string
}

// A node is where a value is: its key as written ("op.args.max"), its name
// in a rule (the key, relative to the table of an array of tables that
// holds it, such as an op; an element of another array with its index:
// "exec[1]"), its path, the line of the nearest key written, and the
// `example` tag of its schema field.
type node struct {
	key, name string
	at        keyPath
	line      int
	example   string
	element   bool // a table in an array of tables: its keys are named relative to it
}

func (d *decoder) child(n node, k string, example string) node {
	c := node{key: k, name: k, at: n.at.key(k), line: n.line, example: example}
	if n.key != "" {
		c.key = n.key + "." + k
	}
	if n.name != "" && !n.element {
		c.name = n.name + "." + k
	}
	if ln, ok := d.lines[c.at]; ok {
		c.line = ln
	}
	return c
}

func (d *decoder) elem(n node, i int, table bool) node {
	e := node{key: n.key, name: fmt.Sprintf("%s[%d]", n.name, i), at: n.at.index(i), line: n.line, example: n.example, element: table}
	if ln, ok := d.lines[e.at]; ok {
		e.line = ln
	}
	return e
}

func (d *decoder) fail(n node, rule string) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.line, Key: n.key, Rule: rule})
}

// decode sets dst, of the schema, from v, the tree's value at n.
func (d *decoder) decode(dst reflect.Value, v any, n node) {
	t := dst.Type()
	if t.Kind() == reflect.Pointer {
		p := reflect.New(t.Elem())
		d.decode(p.Elem(), v, n)
		dst.Set(p)
		return
	}
	ok := false
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]any
		if m, ok = v.(map[string]any); ok {
			d.table(dst, m, n)
		}
	case reflect.Map:
		var m map[string]any
		if m, ok = v.(map[string]any); ok {
			dst.Set(reflect.MakeMapWithSize(t, len(m)))
			for _, k := range slices.Sorted(maps.Keys(m)) {
				e := reflect.New(t.Elem()).Elem()
				d.decode(e, m[k], d.child(n, k, ""))
				dst.SetMapIndex(reflect.ValueOf(k), e)
			}
		}
	case reflect.Slice:
		var a []any
		if a, ok = v.([]any); ok {
			dst.Set(reflect.MakeSlice(t, len(a), len(a)))
			for i := range a {
				d.decode(dst.Index(i), a[i], d.elem(n, i, t.Elem().Kind() == reflect.Struct))
			}
		}
	default:
		// A scalar: a string, a duration, a boolean or an int64.
		vt := reflect.TypeOf(v)
		if ok = vt != nil && vt.Kind() == t.Kind(); ok {
			dst.Set(reflect.ValueOf(v).Convert(t))
		}
	}
	if !ok {
		d.fail(n, fmt.Sprintf("%s must be %s, not a TOML %s", n.name, describe(t, n), tomlKind(v)))
		d.wrong = append(d.wrong, n)
	}
}

// follows reports whether fe, a rule that a value under base (an op, or
// [limits]) breaks once decoded, may follow from an error decode reported
// there: a key the schema lacks, which may be the misspelling of a key of
// its table that is not written and that fe names ("name is required"
// after unknown key "Name"; not `timeout "x" is not a duration`, whose
// key is written); base itself of the wrong type; or fe names a value of
// the wrong type, or a key under it ("on_busy needs exclusive = true"
// after "exclusive must be a boolean"), which decode left unset.
func (d *decoder) follows(base keyPath, fe fieldError) bool {
	for _, u := range d.unknown {
		if !strings.HasPrefix(string(u.at), string(base)) {
			continue
		}
		for _, k := range u.unset {
			if names(fe.key, k) || names(fe.rule, k) {
				return true
			}
		}
	}
	for _, n := range d.wrong {
		if strings.HasPrefix(string(base), string(n.at)) {
			return true
		}
		if strings.HasPrefix(string(n.at), string(base)) && (names(fe.key, n.name) || names(fe.rule, n.name)) {
			return true
		}
	}
	return false
}

// names reports whether text names the key name, or a key under it: name
// stands as a word of its own, or followed by "." or "[".
func names(text, name string) bool {
	word := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(name)
		if (start == 0 || !word(text[start-1]) && text[start-1] != '.') && (end == len(text) || !word(text[end])) {
			return true
		}
		i = start + 1
	}
}

// table sets the fields of dst, a struct of the schema, from the keys of
// m, each by its field's toml tag; a key without a field is an error.
func (d *decoder) table(dst reflect.Value, m map[string]any, n node) {
	var unset []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		f, ok := field(dst.Type(), k)
		c := d.child(n, k, f.Tag.Get("example"))
		if !ok {
			rule := fmt.Sprintf("unknown key %q", c.key)
			if _, ok := field(d.other, k); ok && n.key == "" {
				rule += fmt.Sprintf(" (only daemon.toml may set [%s])", k)
			}
			d.fail(c, rule)
			if unset == nil {
				unset = d.unsetKeys(dst.Type(), m, n)
			}
			d.unknown = append(d.unknown, unknownKey{c.at, unset})
			continue
		}
		d.decode(dst.FieldByIndex(f.Index), m[k], c)
	}
}

// unsetKeys returns the names of the keys of t, the schema of the table m
// at n, that m does not hold.
func (d *decoder) unsetKeys(t reflect.Type, m map[string]any, n node) []string {
	unset := []string{}
	for i := range t.NumField() {
		k := t.Field(i).Tag.Get("toml")
		if _, ok := m[k]; !ok && k != "" {
			unset = append(unset, d.child(n, k, "").name)
		}
	}
	return unset
}

// field returns the field of struct type t tagged toml:"key".
func field(t reflect.Type, key string) (reflect.StructField, bool) {
	if t == nil {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("toml") == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// A duration is a duration string in the schema, such as "30m", parsed
// by time.ParseDuration once decoded.
type duration string

// describe says in the user's words what a value of schema type t is.
func describe(t reflect.Type, n node) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describe(t.Elem(), n)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return fmt.Sprintf("an array of [[%s]] tables", n.key)
		}
		return "an array of " + plural(t.Elem())
	case reflect.Map:
		return "a table of " + plural(t.Elem())
	case reflect.Struct:
		if n.example != "" {
			return "a table such as " + n.example
		}
		return "a table"
	}
	if t == reflect.TypeFor[duration]() {
		return fmt.Sprintf("a duration string such as %q", n.example)
	}
	return scalarNames[t.Kind()][0]
}

// scalarNames names a value of each kind of scalar in the schema, and
// several of them.
var scalarNames = map[reflect.Kind][2]string{
	reflect.String: {"a string", "strings"},
	reflect.Bool:   {"a boolean", "booleans"},
	reflect.Int64:  {"an integer", "integers"},
}

func plural(t reflect.Type) string { return scalarNames[t.Kind()][1] }

// tomlKind names the TOML type of v, a value of go-toml's generic tree.
func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	case time.Time:
		return "offset date-time"
	case toml.LocalDateTime:
		return "local date-time"
	case toml.LocalDate:
		return "local date"
	case toml.LocalTime:
		return "local time"
	}
	return fmt.Sprintf("%T", v)
}
