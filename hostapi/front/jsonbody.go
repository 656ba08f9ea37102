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
// literal null (expecting 'u') at byte 2"), a field of the wrong type
// ("args must be a list of strings"), a field v does not have, and
// anything after the one JSON value. shape is the body wanted, as in
// {"args": ["..."]}, which the errors about the object as a whole show.
// Every JSON body the daemon reads is decoded here.
func decodeJSON(data []byte, v any, shape string) error {
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
