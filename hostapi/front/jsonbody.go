package front

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// decodeJSON decodes data, a request body, into v, a pointer to a struct,
// and says what is wrong in the caller's words, never in Go's: a body
// that is not JSON ("the body is not JSON: invalid character 'o' in
// literal null (expecting 'u') at byte 2"), a body that is not one JSON
// object (null included), a key that is not the JSON name of a field of
// v as written (encoding/json would match "ARGS" to args), a key given
// twice (encoding/json would keep the last), null for a field, a field
// of the wrong type ("args must be a list of strings"), and anything
// after the one JSON value. shape is the body wanted, as in
// {"args": ["..."]}, which the errors about the object as a whole show.
// Every JSON body the daemon reads is decoded here.
func decodeJSON(data []byte, v any, shape string) error {
	if err := checkKeys(data, reflect.TypeOf(v).Elem(), shape); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("the body is not JSON: %s at byte %d", se, se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the body is not JSON: it ends at byte %d, within a value", len(data))
	case errors.As(err, &te) && te.Field == "":
		got, _, _ := strings.Cut(te.Value, " ") // "number 1.5"
		return fmt.Errorf("the body must be a JSON object such as %s, not %s", shape, jsonKind[got])
	case errors.As(err, &te):
		return fmt.Errorf("%s must be %s", te.Field, kind(fieldType(reflect.TypeOf(v), te.Field, te.Type)))
	case err != nil:
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("field %s is not known: the body is %s", name, shape)
		}
		return err
	}
	rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")
	if len(rest) > 0 {
		return fmt.Errorf("the body holds more than one JSON value: more follows at byte %d", len(data)-len(rest)+1)
	}
	return nil
}

// checkKeys checks the keys of data, a JSON object for a struct of type
// t, where encoding/json is lax: it refuses null for the whole body, a key
// that is not a field's JSON name exactly, a key given twice and null
// for a field. What is not JSON, or not an object, it leaves to the
// decoder, which says what is wrong with it.
func checkKeys(data []byte, t reflect.Type, shape string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	if tok == nil {
		return fmt.Errorf("the body must be a JSON object such as %s, not null", shape)
	}
	if tok != json.Delim('{') {
		return nil
	}
	fields := jsonFields(t)
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		ft, ok := fields[key]
		switch {
		case !ok:
			return fmt.Errorf("field %q is not known: the body is %s", key, shape)
		case seen[key]:
			return fmt.Errorf("field %q is given twice", key)
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if string(value) == "null" {
			return fmt.Errorf("%s must be %s, not null", key, kind(ft))
		}
	}
	return nil
}

// jsonFields maps the JSON name of each field of the struct type t that
// encoding/json sets to the field's type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || tag == "-":
		case tag == "":
			fields[f.Name] = f.Type
		default:
			fields[tag] = f.Type
		}
	}
	return fields
}

// fieldType is the type of the field of t (a struct, or a pointer to one)
// at path, a dotted list of JSON names as json.UnmarshalTypeError.Field
// gives it, or def when path names none.
func fieldType(t reflect.Type, path string, def reflect.Type) reflect.Type {
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return def
		}
		f, ok := t.FieldByNameFunc(func(n string) bool {
			sf, _ := t.FieldByName(n)
			tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			return tag == name || tag == "" && strings.EqualFold(n, name)
		})
		if !ok {
			return def
		}
		t = f.Type
	}
	return t
}

// kind says what a JSON value for a Go value of type t is.
func kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list of " + plural(kind(t.Elem()))
	case reflect.Pointer:
		return kind(t.Elem())
	}
	return "an object"
}

// plural turns what kind says of one value into the words for several.
func plural(one string) string {
	switch one {
	case "true or false":
		return "true or false values"
	case "an object":
		return "objects"
	}
	one = strings.TrimPrefix(one, "a ")
	if rest, ok := strings.CutPrefix(one, "list of "); ok {
		return "lists of " + rest
	}
	return one + "s"
}

// jsonKind names, in the words kind uses, the kinds of JSON value that
// json.UnmarshalTypeError.Value gives.
var jsonKind = map[string]string{
	"string": "a string", "number": "a number", "bool": "true or false",
	"array": "a list", "object": "an object",
}
