package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/unitrun/unitrun/internal/yamlstrict"
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
	var d decoder
	if err := d.walker().Node(doc, reflect.ValueOf(&p).Elem(), ""); err != nil {
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

// maxProblems bounds the errors reported about one document.
const maxProblems = 100

type decoder struct {
	errs Refusals
}

func (d *decoder) fail(path, format string, args ...any) { d.errs.Add(path, format, args...) }

// walker returns the walker that decodes a Pod into d: by the fields'
// JSON names, a null leaving a value zero (as the API server takes it)
// and a map key given twice keeping its last value.
func (d *decoder) walker() *yamlstrict.Walker {
	return &yamlstrict.Walker{
		Tag:         "json",
		NullIsZero:  true,
		LastKeyWins: true,
		BareKeys:    true,
		Special:     d.special,
		Report:      d.report,
		Stop: func() error {
			if len(d.errs) >= maxProblems {
				return fmt.Errorf("%w; and more: fix these first", d.errs)
			}
			return nil
		},
	}
}

// report records p in Kubernetes' words.
func (d *decoder) report(p yamlstrict.Problem) {
	field := yamlstrict.Join(p.Path, p.Key)
	switch p.Rule {
	case yamlstrict.WrongKind:
		want := p.Want
		if want == "a sequence" {
			want = "a list"
		}
		d.fail(p.Path, "must be %s", want)
	case yamlstrict.NotBool:
		d.fail(p.Path, "%q: must be true or false", p.Node.Value)
	case yamlstrict.NotInt:
		d.fail(p.Path, "%q: must be an integer", p.Node.Value)
	case yamlstrict.KeyNotName:
		d.fail(p.Path, "keys must be field names")
	case yamlstrict.FieldUnknown:
		if p.In == reflect.TypeFor[Volume]() {
			d.fail(field, "not supported: unitrun mounts hostPath and emptyDir volumes (unitrun-node also configMap, secret, downwardAPI and projected ones)")
		} else {
			d.fail(field, "not a field of a Kubernetes Pod")
		}
	case yamlstrict.FieldTwice:
		d.fail(field, "given twice")
	}
}

var (
	anyType         = reflect.TypeFor[Any]()
	quantityType    = reflect.TypeFor[Quantity]()
	intOrStringType = reflect.TypeFor[IntOrString]()
)

// special decodes an Any, a Quantity or an IntOrString, and reports
// whether v is one.
func (d *decoder) special(w *yamlstrict.Walker, n *yaml.Node, v reflect.Value, path string) bool {
	switch v.Type() {
	case anyType:
		v.Set(reflect.ValueOf(Any{set: true}))
	case quantityType:
		if s, ok := w.Scalar(n, path); ok {
			q, err := ParseQuantity(s)
			if err != nil {
				d.fail(path, "%q: %v", s, err)
			}
			v.Set(reflect.ValueOf(q))
		}
	case intOrStringType:
		var i int32
		if n.Kind == yaml.ScalarNode && n.Tag == "!!int" && n.Decode(&i) == nil {
			v.Set(reflect.ValueOf(IntOrString{Int: i}))
		} else if s, ok := w.Scalar(n, path); ok {
			v.Set(reflect.ValueOf(IntOrString{Str: s}))
		}
	default:
		return false
	}
	return true
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
