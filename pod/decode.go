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

	"github.com/unitrun/unitrun/internal/yamlstrict"
	"github.com/unitrun/unitrun/unit"
)

// decode reads the one YAML document in data into v, a pointer to a struct.
//
// It walks the document itself rather than using yaml.Decoder.KnownFields,
// whose errors give a line number and a Go type name where a user needs the
// field path: decode reports `apps[2]: field "exce" not known`. It also
// refuses keys given twice, nulls and values of the wrong kind, each with the
// path of the value, and stops once aliases have expanded the document past
// yamlstrict.MaxNodes values. It reports every such field, each once, and
// goes on after each: problems holds one *FieldError per field, in
// document order, and bad the paths of the values it could not decode,
// which it leaves zero. err is for a document it cannot read at all.
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
	var d decoder
	if err := d.walker().Node(doc.Content[0], reflect.ValueOf(v).Elem(), ""); errors.Is(err, errTooMany) {
		return d.errs, d.bad, err
	} else if err != nil {
		return nil, nil, fmt.Errorf("manifest %w", err)
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

// maxProblems bounds the errors reported about one manifest: a few aliases
// could otherwise repeat one error a million times.
const maxProblems = 100

// errTooMany follows the first maxProblems errors.
var errTooMany = fmt.Errorf("more than %d errors: fix these first", maxProblems)

type decoder struct {
	errs []error  // the fields that break a rule, in document order
	bad  []string // the paths of the values not decoded
}

// walker returns the walker that decodes a manifest into d: by the
// fields' yaml tags, refusing nulls and map keys given twice.
func (d *decoder) walker() *yamlstrict.Walker {
	return &yamlstrict.Walker{
		Tag:     "yaml",
		Special: d.special,
		Report:  d.report,
		Stop: func() error {
			if len(d.errs) >= maxProblems {
				return errTooMany
			}
			return nil
		},
	}
}

// fail records e, a value at e.Path that could not be decoded.
func (d *decoder) fail(e *FieldError) {
	d.errs = append(d.errs, e)
	d.bad = append(d.bad, e.Path)
}

// report records p in a manifest's words.
func (d *decoder) report(p yamlstrict.Problem) {
	switch p.Rule {
	case yamlstrict.Null:
		d.fail(&FieldError{Path: p.Path, Rule: "must not be null"})
	case yamlstrict.WrongKind:
		d.fail(kindError(p.Node, p.Path, p.Want))
	case yamlstrict.NotBool:
		d.fail(&FieldError{Path: p.Path, Value: p.Node.Value, Rule: "must be true or false"})
	case yamlstrict.NotInt:
		d.fail(&FieldError{Path: p.Path, Value: p.Node.Value, Rule: "must be an integer"})
	case yamlstrict.KeyNotName:
		d.errs = append(d.errs, &FieldError{Path: p.Path, Rule: "keys must be field names"})
	case yamlstrict.FieldUnknown:
		d.errs = append(d.errs, &FieldError{Path: p.Path, Rule: fmt.Sprintf("field %q not known", p.Key)})
	case yamlstrict.FieldTwice:
		d.errs = append(d.errs, &FieldError{Path: p.Path, Rule: fmt.Sprintf("field %q given twice", p.Key)})
	case yamlstrict.KeyTwice:
		d.errs = append(d.errs, &FieldError{Path: p.Path, Rule: fmt.Sprintf("key %q given twice", p.Key)})
	}
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// special decodes a time span, or a value that reads itself from text,
// and reports whether v is one.
func (d *decoder) special(w *yamlstrict.Walker, n *yaml.Node, v reflect.Value, path string) bool {
	switch {
	case v.Type() == durationType:
		d.duration(w, n, v, path)
		return true
	case reflect.PointerTo(v.Type()).Implements(textUnmarshalerType):
		s, ok := w.Scalar(n, path)
		if !ok {
			return true
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			d.fail(&FieldError{Path: path, Value: s, Rule: err.Error()})
		}
		return true
	}
	return false
}

// duration reads a time span in systemd's syntax ("1min 30s", "90") or
// Go's ("1m30s", "1.5s").
func (d *decoder) duration(w *yamlstrict.Walker, n *yaml.Node, v reflect.Value, path string) {
	s, ok := w.Scalar(n, path)
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

// kindError is the error of n, at path, which is not want ("a mapping").
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
