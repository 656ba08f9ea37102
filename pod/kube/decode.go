package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/unitrun/unitrun/pod"
)

// IsPodYAML reports whether data is Kubernetes YAML rather than a unitrun
// manifest: its first document is a mapping with an apiVersion or kind,
// fields a unitrun manifest does not have. Data in which neither word
// occurs is not decoded, so that a manifest pays no second parse.
func IsPodYAML(data []byte) bool {
	if !bytes.Contains(data, []byte("apiVersion")) && !bytes.Contains(data, []byte("kind")) {
		return false
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return false
		}
		if empty(&doc) {
			continue
		}
		m := doc.Content[0]
		if m.Kind != yaml.MappingNode {
			return false
		}
		for i := 0; i < len(m.Content); i += 2 {
			if k := m.Content[i].Value; k == "apiVersion" || k == "kind" {
				return true
			}
		}
		return false
	}
}

// A Document is one document of a Kubernetes YAML file: the Pod it
// holds and the refusals of its fields that are not a Pod's or not of
// the right kind, which the Pod holds as zero.
type Document struct {
	Pod      *Pod
	Refusals Refusals
}

// Decode reads the documents of data, YAML (or JSON), skipping those that
// are empty; its error is for data that is not YAML or has no document.
// A document that is not apiVersion v1, kind Pod is refused, and so is
// each field of it that is not a Pod's, by its path
// ("spec.containers[0].comand: not a field of a Kubernetes Pod").
func Decode(data []byte) ([]Document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Document
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, pod.SyntaxError(data, err)
		}
		if empty(&doc) {
			continue
		}
		p, rs, err := decodePod(doc.Content[0])
		if err != nil {
			return nil, err
		}
		docs = append(docs, Document{Pod: p, Refusals: rs})
	}
	if len(docs) == 0 {
		return nil, errors.New("holds no Pod")
	}
	return docs, nil
}

// empty reports whether doc is an empty document, as "---" at the top or
// twice makes.
func empty(doc *yaml.Node) bool {
	return len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null"
}

// decodePod decodes one document into a Pod.
func decodePod(doc *yaml.Node) (*Pod, Refusals, error) {
	var p Pod
	d := decoder{budget: maxNodes}
	if err := d.node(doc, reflect.ValueOf(&p).Elem(), ""); err != nil {
		return nil, nil, err
	}
	if doc.Kind == yaml.MappingNode && !p.isPod() {
		// Its kind alone is refused: the fields a Pod lacks are the
		// kind's, not mistakes.
		d.errs = nil
		d.fail("kind", "%q of apiVersion %q: unitrun runs a Pod (apiVersion: v1, kind: Pod)", p.Kind, p.APIVersion)
	}
	return &p, d.errs, nil
}

// isPod reports whether p says it is a Pod (apiVersion v1, kind Pod).
func (p *Pod) isPod() bool { return p.APIVersion == "v1" && p.Kind == "Pod" }

// maxNodes bounds the values one document may expand to, so that a few
// aliases cannot make decoding take quadratic time; maxProblems the
// errors reported about it.
const (
	maxNodes    = 1 << 20
	maxProblems = 100
)

type decoder struct {
	budget int
	errs   Refusals
}

func (d *decoder) fail(path, format string, args ...any) { d.errs.Add(path, format, args...) }

var (
	anyType         = reflect.TypeFor[Any]()
	quantityType    = reflect.TypeFor[Quantity]()
	intOrStringType = reflect.TypeFor[IntOrString]()
)

// node decodes n into v; path names n in errors. A null leaves v zero, as
// the API server takes it. It records what breaks a rule and goes on; its
// error is for a document too large to go on with.
func (d *decoder) node(n *yaml.Node, v reflect.Value, path string) error {
	if d.budget--; d.budget < 0 {
		return fmt.Errorf("expands to more than %d values", maxNodes)
	}
	if len(d.errs) >= maxProblems {
		return fmt.Errorf("%w; and more: fix these first", d.errs)
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	switch v.Type() {
	case anyType:
		v.Set(reflect.ValueOf(Any{set: true}))
		return nil
	case quantityType:
		if s, ok := d.scalar(n, path); ok {
			q, err := ParseQuantity(s)
			if err != nil {
				d.fail(path, "%q: %v", s, err)
			}
			v.Set(reflect.ValueOf(q))
		}
		return nil
	case intOrStringType:
		var i int32
		if n.Kind == yaml.ScalarNode && n.Tag == "!!int" && n.Decode(&i) == nil {
			v.Set(reflect.ValueOf(IntOrString{Int: i}))
		} else if s, ok := d.scalar(n, path); ok {
			v.Set(reflect.ValueOf(IntOrString{Str: s}))
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
			d.fail(path, "must be a list")
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
		if n.Kind != yaml.MappingNode {
			d.fail(path, "must be a mapping")
			return nil
		}
		v.Set(reflect.MakeMapWithSize(v.Type(), len(n.Content)/2))
		for i := 0; i < len(n.Content); i += 2 {
			k, ok := d.scalar(n.Content[i], path)
			if !ok {
				continue
			}
			elem := reflect.New(v.Type().Elem()).Elem()
			if err := d.node(n.Content[i+1], elem, fmt.Sprintf("%s[%s]", path, k)); err != nil {
				return err
			}
			v.SetMapIndex(reflect.ValueOf(k), elem)
		}
		return nil
	case reflect.String:
		if s, ok := d.scalar(n, path); ok {
			v.SetString(s)
		}
		return nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			d.fail(path, "%q: must be true or false", n.Value)
			return nil
		}
		v.SetBool(b)
		return nil
	case reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.fail(path, "%q: must be an integer", n.Value)
			return nil
		}
		v.SetInt(i)
		return nil
	}
	panic("kube: decode: unexpected type " + v.Type().String())
}

// mapping decodes the mapping n into the struct v by its fields' JSON
// names, refusing a key that names none.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		d.fail(path, "must be a mapping")
		return nil
	}
	fields := make(map[string]int)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		fields[name] = i
	}
	seen := make(map[string]bool)
	for i := 0; i < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		field := join(path, key.Value)
		f, ok := fields[key.Value]
		switch {
		case key.Kind != yaml.ScalarNode:
			d.fail(path, "keys must be field names")
		case !ok && v.Type() == reflect.TypeFor[Volume]():
			d.fail(field, "not supported: unitrun mounts hostPath and emptyDir volumes (unitrun-node also configMap, secret, downwardAPI and projected ones)")
		case !ok:
			d.fail(field, "not a field of a Kubernetes Pod")
		case seen[key.Value]:
			d.fail(field, "given twice")
		default:
			seen[key.Value] = true
			if err := d.node(val, v.Field(f), field); err != nil {
				return err
			}
		}
	}
	return nil
}

// scalar returns the text of the scalar n, or records that it is not one.
func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!binary" {
		d.fail(path, "must be a string")
		return "", false
	}
	return n.Value, true
}

// join appends field to the path of its parent.
func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// IntOrString is a port given by number or by name.
type IntOrString struct {
	Int int32
	Str string
}

// String is the port as the Pod gives it.
func (p IntOrString) String() string {
	if p.Str != "" {
		return p.Str
	}
	return fmt.Sprint(p.Int)
}
