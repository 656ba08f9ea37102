package pod

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/unitrun/unitrun/unit"
)

// decode reads the one YAML document in data into v, a pointer to a struct.
//
// It walks the document itself rather than using yaml.Decoder.KnownFields,
// whose errors give a line number and a Go type name where a user needs the
// field path: decode reports `apps[2]: field "exce" not known`. It also
// refuses keys given twice, nulls and values of the wrong kind, each with the
// path of the value, and stops once aliases have expanded the document past
// maxNodes values. It reports every such field, each once, and goes on
// after each: problems holds one *FieldError per field, in document
// order, and bad the paths of the values it could not decode, which it
// leaves zero. err is for a document it cannot read at all.
func decode(data []byte, v any) (problems []error, bad []string, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, errors.New("manifest is empty")
		}
		return nil, nil, SyntaxError(data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, nil, errors.New("manifest must hold one YAML document")
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, errors.New("manifest must be a YAML mapping")
	}
	d := decoder{budget: maxNodes}
	if err := d.node(doc.Content[0], reflect.ValueOf(v).Elem(), ""); errors.Is(err, errTooMany) {
		return d.errs, d.bad, err
	} else if err != nil {
		return nil, nil, err
	}
	return d.errs, d.bad, nil
}

// SyntaxError returns err, yaml.v3's error for data (of one document or
// several), which is not YAML, at the line where the problem is: yaml.v3 names the line where the block
// that holds it starts, and for most errors counts it from 0, so that a
// key indented wrong on line 4 is reported at line 2. The problem's line is
// the first at which the document's lines up to it fail with the same
// message; the search stops after maxSyntaxLines lines, and err is kept
// when it finds none.
func SyntaxError(data []byte, err error) error {
	from, msg, ok := strings.Cut(strings.TrimPrefix(err.Error(), "yaml: line "), ": ")
	n, aerr := strconv.Atoi(from)
	if !ok || aerr != nil {
		return err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for k := max(n, 1); k <= len(lines) && k <= n+maxSyntaxLines; k++ {
		if e := parseAll(bytes.Join(lines[:k], nil)); e != nil && strings.HasSuffix(e.Error(), ": "+msg) {
			return fmt.Errorf("line %d: %s", k, msg)
		}
	}
	return err
}

// parseAll parses every YAML document of data and returns the first
// error.
func parseAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// maxSyntaxLines bounds how far past the line yaml.v3 names syntaxError
// looks for the problem.
const maxSyntaxLines = 200

// maxNodes bounds the values one manifest may expand to, so that a few
// aliases cannot make decoding take quadratic time.
const maxNodes = 1 << 20

// maxProblems bounds the errors reported about one manifest: a few aliases
// could otherwise repeat one error a million times.
const maxProblems = 100

// errTooMany follows the first maxProblems errors.
var errTooMany = fmt.Errorf("more than %d errors: fix these first", maxProblems)

type decoder struct {
	budget int      // values left to decode
	errs   []error  // the fields that break a rule, in document order
	bad    []string // the paths of the values not decoded
}

// fail records e, a value at e.Path that could not be decoded.
func (d *decoder) fail(e *FieldError) {
	d.errs = append(d.errs, e)
	d.bad = append(d.bad, e.Path)
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// node decodes n into v; path names n in errors. It records what breaks a
// rule and goes on; its error is for a document too large to go on with.
func (d *decoder) node(n *yaml.Node, v reflect.Value, path string) error {
	if d.budget--; d.budget < 0 {
		return fmt.Errorf("manifest expands to more than %d values", maxNodes)
	}
	if len(d.errs) >= maxProblems {
		return errTooMany
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		d.fail(&FieldError{Path: path, Rule: "must not be null"})
		return nil
	}
	switch {
	case v.Type() == durationType:
		d.duration(n, v, path)
		return nil
	case reflect.PointerTo(v.Type()).Implements(textUnmarshalerType):
		s, ok := d.scalar(n, path)
		if !ok {
			return nil
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			d.fail(&FieldError{Path: path, Value: s, Rule: err.Error()})
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return d.node(n, v.Elem(), path)
	case reflect.Struct:
		return d.mapping(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(kindError(n, path, "a sequence"))
			return nil
		}
		v.Set(reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content)))
		for i, item := range n.Content {
			if err := d.node(item, v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		return d.dict(n, v, path)
	case reflect.String:
		if s, ok := d.scalar(n, path); ok {
			v.SetString(s)
		}
		return nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			d.fail(&FieldError{Path: path, Value: n.Value, Rule: "must be true or false"})
			return nil
		}
		v.SetBool(b)
		return nil
	case reflect.Int:
		var i int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.fail(&FieldError{Path: path, Value: n.Value, Rule: "must be an integer"})
			return nil
		}
		v.SetInt(i)
		return nil
	}
	panic("pod: decode: unexpected type " + v.Type().String())
}

// mapping decodes the mapping n into the struct v by the fields' yaml tags.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		d.fail(kindError(n, path, "a mapping"))
		return nil
	}
	fields := make(map[string]int)
	for i := range v.NumField() {
		fields[v.Type().Field(i).Tag.Get("yaml")] = i
	}
	seen := make(map[string]bool)
	for i := 0; i < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			d.errs = append(d.errs, &FieldError{Path: path, Rule: "keys must be field names"})
			continue
		}
		field, ok := fields[key.Value]
		if !ok {
			d.errs = append(d.errs, &FieldError{Path: path, Rule: fmt.Sprintf("field %q not known", key.Value)})
			continue
		}
		if seen[key.Value] {
			d.errs = append(d.errs, &FieldError{Path: path, Rule: fmt.Sprintf("field %q given twice", key.Value)})
			continue
		}
		seen[key.Value] = true
		if err := d.node(val, v.Field(field), join(path, key.Value)); err != nil {
			return err
		}
	}
	return nil
}

// dict decodes the mapping n into the map v, whose keys are strings.
func (d *decoder) dict(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		d.fail(kindError(n, path, "a mapping"))
		return nil
	}
	v.Set(reflect.MakeMapWithSize(v.Type(), len(n.Content)/2))
	for i := 0; i < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		k, ok := d.scalar(key, path)
		if !ok {
			continue
		}
		keyPath := fmt.Sprintf("%s[%q]", path, k)
		if v.MapIndex(reflect.ValueOf(k)).IsValid() {
			d.errs = append(d.errs, &FieldError{Path: path, Rule: fmt.Sprintf("key %q given twice", k)})
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := d.node(val, elem, keyPath); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(k), elem)
	}
	return nil
}

// duration reads a time span in systemd's syntax ("1min 30s", "90") or
// Go's ("1m30s", "1.5s").
func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	s, ok := d.scalar(n, path)
	if !ok {
		return
	}
	t, err := unit.ParseTimeSpan(s)
	if err != nil {
		t, err = time.ParseDuration(s)
	}
	if err != nil || t < 0 || t == math.MaxInt64 {
		d.fail(&FieldError{Path: path, Value: s, Rule: `must be a finite time span like "90s", "1min 30s" or "1m30s"`})
		return
	}
	v.SetInt(int64(t))
}

// scalar returns the text of the scalar n: a string, or a number or boolean
// read as its text. It records a value of another kind, and returns false.
func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Tag == "!!binary" {
		d.fail(kindError(n, path, "a string"))
		return "", false
	}
	return n.Value, true
}

func kindError(n *yaml.Node, path, want string) *FieldError {
	got := map[yaml.Kind]string{
		yaml.ScalarNode:   "a scalar",
		yaml.SequenceNode: "a sequence",
		yaml.MappingNode:  "a mapping",
	}[n.Kind]
	if n.Tag == "!!null" {
		got = "null"
	}
	return &FieldError{Path: path, Rule: fmt.Sprintf("must be %s, not %s", want, got)}
}

// join appends field to the path of its parent.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// A FieldError is a manifest field that breaks a rule.
type FieldError struct {
	Path  string // e.g. apps[1].name; "" for the whole document
	Value string // the offending value, if the rule is about one
	Rule  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Value != "" {
		if e.Path != "" {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(e.Value))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Rule)
	return b.String()
}
