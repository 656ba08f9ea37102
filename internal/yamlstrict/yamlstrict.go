// Package yamlstrict decodes yaml.v3 nodes into structs strictly: a key
// that names no field, a key given twice and a value of the wrong kind are
// problems, each reported with the path of the value, and the walk goes on
// after each. unitrun manifests (package pod) and Kubernetes Pods (package
// pod/kube) are decoded by it; each says how it names fields, reads nulls
// and words its errors.
package yamlstrict

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxNodes bounds the values one document may expand to, so that a few
// aliases cannot make decoding take quadratic time.
const MaxNodes = 1 << 20

// A Rule is what a Problem breaks.
type Rule int

const (
	Null         Rule = iota // a null, where nulls are refused
	WrongKind                // a value that is not Want
	NotBool                  // a value that is not true or false
	NotInt                   // a value that is not an integer that fits
	KeyNotName               // a key of a struct's mapping that is not a scalar
	FieldUnknown             // a key that names no field of the struct In
	FieldTwice               // a key of a struct's mapping given twice
	KeyTwice                 // a key of a map given twice
)

// A Problem is a value that breaks a Rule.
type Problem struct {
	Rule Rule
	Path string       // the value's path; for a key, its mapping's
	Node *yaml.Node   // the value, or the key
	Key  string       // for FieldUnknown, FieldTwice and KeyTwice: the key
	In   reflect.Type // for FieldUnknown: the struct
	Want string       // for WrongKind: "a mapping", "a sequence" or "a string"
}

// A Walker decodes nodes into values of structs (by their fields' Tag
// names), pointers, slices, maps of string keys, strings, booleans and
// integers, and of the types Special decodes.
type Walker struct {
	// Tag is the struct tag whose name (up to a comma) is a field's key:
	// "yaml" or "json".
	Tag string
	// NullIsZero leaves a null value zero (and reads a null key as its
	// text), as the Kubernetes API server does; otherwise a null value is
	// a Null problem and a null key a WrongKind one.
	NullIsZero bool
	// LastKeyWins keeps the last value of a map key given twice;
	// otherwise the key is a KeyTwice problem and its first value kept.
	LastKeyWins bool
	// BareKeys names a map's value path[key] rather than path["key"].
	BareKeys bool
	// Special decodes n into v and returns true if v is of a type it
	// decodes itself; it reads a scalar with w.Scalar.
	Special func(w *Walker, n *yaml.Node, v reflect.Value, path string) bool
	// Report records a problem.
	Report func(Problem)
	// Stop, called before each value, returns an error to stop the walk
	// (too many problems already), or nil.
	Stop func() error

	nodes int
}

// Node decodes n into v; path names n in problems. It reports what breaks
// a rule and goes on; its error is for a document too large to go on with
// (more than MaxNodes values) or Stop's.
func (w *Walker) Node(n *yaml.Node, v reflect.Value, path string) error {
	if w.nodes++; w.nodes > MaxNodes {
		return fmt.Errorf("expands to more than %d values", MaxNodes)
	}
	if err := w.Stop(); err != nil {
		return err
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		if !w.NullIsZero {
			w.Report(Problem{Rule: Null, Path: path, Node: n})
		}
		return nil
	}
	if w.Special(w, n, v, path) {
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return w.Node(n, v.Elem(), path)
	case reflect.Struct:
		return w.mapping(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.Report(Problem{Rule: WrongKind, Path: path, Node: n, Want: "a sequence"})
			return nil
		}
		v.Set(reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content)))
		for i, item := range n.Content {
			if err := w.Node(item, v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		return w.dict(n, v, path)
	case reflect.String:
		if s, ok := w.Scalar(n, path); ok {
			v.SetString(s)
		}
		return nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			w.Report(Problem{Rule: NotBool, Path: path, Node: n})
			return nil
		}
		v.SetBool(b)
		return nil
	case reflect.Int, reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			w.Report(Problem{Rule: NotInt, Path: path, Node: n})
			return nil
		}
		v.SetInt(i)
		return nil
	}
	panic("yamlstrict: unexpected type " + v.Type().String())
}

// mapping decodes the mapping n into the struct v by its fields' Tag
// names.
func (w *Walker) mapping(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		w.Report(Problem{Rule: WrongKind, Path: path, Node: n, Want: "a mapping"})
		return nil
	}
	fields := make(map[string]int)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get(w.Tag), ",")
		fields[name] = i
	}
	seen := make(map[string]bool)
	for i := 0; i < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		f, ok := fields[key.Value]
		switch {
		case key.Kind != yaml.ScalarNode:
			w.Report(Problem{Rule: KeyNotName, Path: path, Node: key})
		case !ok:
			w.Report(Problem{Rule: FieldUnknown, Path: path, Node: key, Key: key.Value, In: v.Type()})
		case seen[key.Value]:
			w.Report(Problem{Rule: FieldTwice, Path: path, Node: key, Key: key.Value})
		default:
			seen[key.Value] = true
			if err := w.Node(val, v.Field(f), Join(path, key.Value)); err != nil {
				return err
			}
		}
	}
	return nil
}

// dict decodes the mapping n into the map v, whose keys are strings.
func (w *Walker) dict(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		w.Report(Problem{Rule: WrongKind, Path: path, Node: n, Want: "a mapping"})
		return nil
	}
	v.Set(reflect.MakeMapWithSize(v.Type(), len(n.Content)/2))
	for i := 0; i < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		k, ok := w.Scalar(key, path)
		if !ok {
			continue
		}
		var keyPath string
		if w.BareKeys {
			keyPath = fmt.Sprintf("%s[%s]", path, k)
		} else {
			keyPath = fmt.Sprintf("%s[%q]", path, k)
		}
		if !w.LastKeyWins && v.MapIndex(reflect.ValueOf(k)).IsValid() {
			w.Report(Problem{Rule: KeyTwice, Path: path, Node: key, Key: k})
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := w.Node(val, elem, keyPath); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(k), elem)
	}
	return nil
}

// Scalar returns the text of the scalar n: a string, or a number or
// boolean read as its text. It reports a value of another kind (a WrongKind
// problem wanting "a string"), and returns false.
func (w *Walker) Scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!binary" || n.Tag == "!!null" && !w.NullIsZero {
		w.Report(Problem{Rule: WrongKind, Path: path, Node: n, Want: "a string"})
		return "", false
	}
	return n.Value, true
}

// Join appends field to the path of its parent.
func Join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
