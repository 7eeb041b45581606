package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"reflect"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
)

func TestRedactor(t *testing.T) {
	t.Parallel()
	env := map[string]string{"A": "sk-aaaa-1111", "B": " sk-aaaa-1111-longer ", "C": "ollama", "Q": `sk-"quoted"<&>`}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	r := Of(map[string]*ensemble.ModelProfile{
		"a": {APIKeyEnv: "A"}, "b": {APIKeyEnv: "B"}, "c": {APIKeyEnv: "C"}, "q": {APIKeyEnv: "Q"},
		"unset": {APIKeyEnv: "UNSET"}, "none": {},
	}, lookup)
	for _, tc := range []struct{ in, want string }{
		{"x sk-aaaa-1111 y", "x [REDACTED] y"},
		{"sk-aaaa-1111-longer!", "[REDACTED]!"},        // the longer key whole
		{"provider ollama", "provider ollama"},         // too short to be a secret
		{`k sk-"quoted"<&>`, "k [REDACTED]"},           // raw
		{jsonString(`sk-"quoted"<&>`), `"[REDACTED]"`}, // and as JSON escapes it
		{"nothing here", "nothing here"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}

	var buf bytes.Buffer
	w := r.Writer(&buf)
	if n, err := w.Write([]byte("key=sk-aaaa-1111\n")); n != 17 || err != nil || buf.String() != "key=[REDACTED]\n" {
		t.Errorf("Writer: %d %v %q", n, err, buf.String())
	}

	err := r.Error(&fs.PathError{Op: "open", Path: "http://x/sk-aaaa-1111", Err: fs.ErrNotExist})
	if err.Error() != "open http://x/[REDACTED]: file does not exist" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Error: %v", err)
	}

	out := map[string]any{"n": 1.5, "list": []any{"sk-aaaa-1111", true}, "sk-aaaa-1111": nil}
	want := map[string]any{"n": 1.5, "list": []any{"[REDACTED]", true}, "[REDACTED]": nil}
	if got := r.Value(out); !reflect.DeepEqual(got, want) {
		t.Errorf("Value = %#v", got)
	}
	if clean := map[string]any{"a": 1.0}; !reflect.DeepEqual(r.Value(clean), clean) {
		t.Error("a value without keys changed")
	}

	var none *Redactor
	if none.String("sk-aaaa-1111") != "sk-aaaa-1111" || none.Writer(&buf) != &buf || New().Longest() != 0 {
		t.Error("a redactor without keys changes nothing")
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Redacting a value keeps its types: a number stays a float64, so a
// condition such as `context.a.score > 3` reads it as before; parts without
// a key are the same values, not copies.
func TestValueKeepsTypes(t *testing.T) {
	t.Parallel()
	r := New("sk-secret-12345")
	inner := map[string]any{"n": 1.0}
	v := map[string]any{"score": 5.0, "note": "saw sk-secret-12345", "list": []any{true, "x sk-secret-12345"}, "inner": inner, "sk-secret-12345": 2.0}
	got := r.Value(v).(map[string]any)
	if s, ok := got["score"].(float64); !ok || s != 5 {
		t.Errorf("score %T %v, want float64 5", got["score"], got["score"])
	}
	if got["note"] != "saw "+Redacted || got["list"].([]any)[1] != "x "+Redacted || got["list"].([]any)[0] != true {
		t.Errorf("redacted %v", got)
	}
	if _, ok := got[Redacted]; !ok {
		t.Errorf("a key in a map key stays: %v", got)
	}
	if v["note"] != "saw sk-secret-12345" {
		t.Error("the original value was changed")
	}
	if reflect.ValueOf(got["inner"]).Pointer() != reflect.ValueOf(inner).Pointer() {
		t.Error("a part with no key was copied")
	}
	if same := r.Value(inner); reflect.ValueOf(same).Pointer() != reflect.ValueOf(inner).Pointer() {
		t.Error("a value with no key was copied")
	}
}

// A key is redacted in every spelling a JSON reader decodes back to it:
// any of its characters as \uXXXX (either case of hex), a slash as \/, and
// escaped again inside a JSON string (\\u002d); text with backslashes but
// no key is left as it is.
func TestEscapedSpellings(t *testing.T) {
	t.Parallel()
	r := New("sk-abc/def0123456")
	for _, tc := range []struct{ in, want string }{
		{`sk\u002dabc/def0123456`, Redacted},
		{`x \u0073\u006B-abc/def0123456 y`, "x " + Redacted + " y"},
		{`sk\u002Dabc\/def0123456`, Redacted},
		{`"sk\\u002dabc/def0123456"`, `"sk\\u002dabc/def0123456"`}, // the backslash is itself escaped: not the key once decoded once
		{`C:\path\to\sk-file \u00e9`, `C:\path\to\sk-file \u00e9`},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, got, tc.want)
		}
		if got := string(r.Bytes([]byte(tc.in))); got != tc.want {
			t.Errorf("Bytes %s: %s", tc.in, got)
		}
	}
	// As a value: a JSON-escaped spelling inside an output's strings.
	v := r.Value(map[string]any{`raw`: `{"k": "sk\u002dabc/def0123456"}`})
	if b, _ := json.Marshal(v); bytes.Contains(b, []byte("abc/def0123456")) {
		t.Errorf("value %s", b)
	}
	var buf bytes.Buffer
	if _, err := r.Writer(&buf).Write([]byte(`{"reply": "sk\u002dabc\/def0123456"}`)); err != nil || buf.String() != `{"reply": "`+Redacted+`"}` {
		t.Errorf("writer: %s %v", buf.String(), err)
	}
}
