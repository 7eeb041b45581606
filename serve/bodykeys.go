package serve

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
)

// unmarshalKnown decodes the JSON body b into v, refusing a key that v (a
// pointer to a struct) does not have: a misspelt "inptu" must not start a
// run with the file's default input as if it were not there.
func unmarshalKnown(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return errorf(CodeBadRequest, "the body is not the JSON expected: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	key, unknown := "", false
	if err := d.Decode(v); err != nil {
		key, unknown = strings.CutPrefix(err.Error(), "json: unknown field ")
	}
	if !unknown {
		return nil
	}
	names := bodyKeys(v)
	return errorf(CodeBadRequest, "the body has an unknown key %s (it takes %s)%s", key,
		strings.Join(names, ", "), ensemble.Suggest(strings.Trim(key, `"`), names))
}

// bodyKeys are the JSON keys of the struct v points to.
func bodyKeys(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var names []string
	if t.Kind() != reflect.Struct {
		return names
	}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}
