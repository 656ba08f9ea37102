package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestSchemaDescribed checks that each field of the file schema has a
// toml tag and that errors can say what its values are: the decoder knows
// its kind, and a duration has an example.
func TestSchemaDescribed(t *testing.T) {
	var walk func(typ reflect.Type, key string)
	walk = func(typ reflect.Type, key string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag := f.Tag.Get("toml")
			if tag == "" {
				t.Errorf("%s field %s has no toml tag", typ, f.Name)
				continue
			}
			n := node{key: strings.TrimPrefix(key+"."+tag, "."), example: f.Tag.Get("example")}
			if d := describe(f.Type, n); d == "" || strings.HasSuffix(d, " ") || strings.Contains(d, `""`) {
				t.Errorf("%s (%s) is described as %q", n.key, f.Type, d)
			}
			walk(f.Type, n.key)
		}
	}
	walk(reflect.TypeFor[fileConfig](), "")
	walk(reflect.TypeFor[fileDropIn](), "")
}
