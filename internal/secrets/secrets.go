// Package secrets redacts the values of API keys from everything ensemble
// writes: results, events, states, reports, errors, graphs and what models
// return. The keys are the values of the variables that the model profiles
// name with api_key_env, read from the environment when the run starts.
package secrets

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/ensemble-run/ensemble/ensemble"
)

// Redacted replaces a key's value.
const Redacted = "[REDACTED]"

// MinLength is the length of the shortest value redacted, in bytes. Shorter
// values are placeholders (ollama, dummy), not secrets: replacing them would
// mangle ordinary text, and the state, and protect nothing.
const MinLength = 8

// Redactor replaces every key it knows. A nil *Redactor, or one without
// keys, changes nothing.
type Redactor struct {
	replacer *strings.Replacer
	// patterns are the spellings the replacer replaces: text that holds
	// none of them, searched for one at a time (fast, where the replacer
	// of several patterns walks every byte), is not given to it.
	patterns []string
	longest  int // bytes of the longest pattern
	// escaped matches a key written with any of its characters as a JSON
	// escape (sk\u002dabc…, which a JSON reader decodes back to the key):
	// text that holds a backslash is matched against it too.
	escaped *regexp.Regexp
	// folded are the spellings matched in any case (spellings.go).
	folded []folded
}

// Of returns the redactor of the keys of every profile in models, looked
// up with lookup.
func Of(models map[string]*ensemble.ModelProfile, lookup func(string) (string, bool)) *Redactor {
	var keys []string
	for _, p := range models {
		if p.APIKeyEnv == "" {
			continue
		}
		if v, ok := lookup(p.APIKeyEnv); ok {
			keys = append(keys, v)
		}
	}
	return New(keys...)
}

// OfEnsemble returns the redactor of the keys of every profile of e and of
// the files loaded with it (its child ensembles': Ensemble.SecretEnvNames),
// looked up with lookup, and of more (a server's own secrets).
func OfEnsemble(e *ensemble.Ensemble, lookup func(string) (string, bool), more ...string) *Redactor {
	keys := slices.Clone(more)
	for _, name := range e.SecretEnvNames() {
		if v, ok := lookup(name); ok {
			keys = append(keys, v)
		}
	}
	return New(keys...)
}

// New returns the redactor of keys. Each key is also redacted in its JSON
// form (a key with a quote, a backslash or <>& is escaped in JSON output),
// URL-escaped, base64-encoded, and in any case (spellings.go).
func New(keys ...string) *Redactor {
	var patterns []string
	add := func(p string) {
		if len(p) >= MinLength && !slices.Contains(patterns, p) {
			patterns = append(patterns, p)
		}
	}
	for _, k := range keys {
		k = strings.TrimSpace(k)
		add(k)
		if b, err := json.Marshal(k); err == nil {
			add(string(b[1 : len(b)-1]))
		}
	}
	longest := 0
	for _, p := range patterns {
		longest = max(longest, len(p))
	}
	r := &Redactor{}
	for _, k := range keys {
		if k = strings.TrimSpace(k); len(k) >= MinLength {
			for _, p := range encodedSpellings(k) {
				add(p)
			}
			r.folded = append(r.folded, foldable(k)...)
		}
	}
	if len(patterns) == 0 {
		return r
	}
	// Longest first: where one key is the prefix of another, the longer
	// one is replaced whole (the replacer tries the pairs in order).
	slices.SortFunc(patterns, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(patterns))
	for _, p := range patterns {
		pairs = append(pairs, p, Redacted)
	}
	r.replacer = strings.NewReplacer(pairs...)
	r.patterns = patterns
	r.longest = longest
	var alts []string
	for _, k := range keys {
		if k = strings.TrimSpace(k); len(k) >= MinLength {
			alts = append(alts, escapedPattern(k))
		}
	}
	slices.SortFunc(alts, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	r.escaped = regexp.MustCompile(strings.Join(alts, "|"))
	return r
}

// escapedPattern matches key with any of its characters written as JSON
// writes or may write them: itself, \uXXXX (any case of hex digits), and
// \/ for a slash, \" and \\ for a quote and a backslash.
func escapedPattern(key string) string {
	var b strings.Builder
	for _, c := range key {
		b.WriteString("(?:")
		b.WriteString(regexp.QuoteMeta(string(c)))
		if c <= 0xFFFF {
			b.WriteString(`|\\u`)
			for _, h := range fmt.Sprintf("%04x", c) {
				if h >= 'a' {
					fmt.Fprintf(&b, "[%c%c]", h, h-'a'+'A')
				} else {
					b.WriteRune(h)
				}
			}
		}
		switch c {
		case '/':
			b.WriteString(`|\\/`)
		case '"':
			b.WriteString(`|\\"`)
		case '\\':
			b.WriteString(`|\\\\`)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Empty reports whether r redacts nothing.
func (r *Redactor) Empty() bool { return r == nil || r.replacer == nil }

// Longest is the length in bytes of the longest spelling of a key (0
// without keys), every character of it escaped: a stream that holds back
// Longest()-1 bytes never lets a split key through.
func (r *Redactor) Longest() int {
	if r.Empty() {
		return 0
	}
	return 6 * r.longest
}

// String replaces every key in s, in every spelling.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	if r.holdsAPattern(s) {
		s = r.replacer.Replace(s)
	}
	if strings.IndexByte(s, '\\') >= 0 {
		s = r.escaped.ReplaceAllLiteralString(s, Redacted)
	}
	for _, f := range r.folded {
		s = f.replace(s)
	}
	return s
}

// holdsAPattern reports whether s holds one of the replacer's patterns.
func (r *Redactor) holdsAPattern(s string) bool {
	for _, p := range r.patterns {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// Bytes replaces every key in b, in every spelling; b itself is left as
// it is.
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() {
		return b
	}
	return []byte(r.String(string(b)))
}

// Value returns v with every key redacted from its strings and map keys: v
// itself when it holds no key, else a copy of the parts that changed. Types
// are kept (a number stays the number it was), so a redacted output behaves
// in conditions exactly as it did before. v is a JSON value: an agent's
// output or input data.
func (r *Redactor) Value(v any) any {
	if r.Empty() || v == nil {
		return v
	}
	out, _ := r.value(v)
	return out
}

func (r *Redactor) value(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool, float64, int, int64, json.Number:
		return v, false
	case string:
		s := r.String(x)
		return s, s != x
	case []any:
		var out []any
		for i, e := range x {
			if ne, changed := r.value(e); changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = ne
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			nk := r.String(k)
			ne, changed := r.value(e)
			if !changed && nk == k {
				continue
			}
			if out == nil {
				out = maps.Clone(x)
			}
			delete(out, k)
			out[nk] = ne
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	// Anything else (a struct, a typed map): through its JSON form.
	data, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	red := r.Bytes(data)
	if bytes.Equal(red, data) {
		return v, false
	}
	var out any
	if json.Unmarshal(red, &out) != nil {
		return Redacted, true // cannot happen: a key is replaced inside a string
	}
	return out, true
}

// Error returns err with every key redacted from its message; the original
// stays reachable through errors.Is and errors.As.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if text := r.String(msg); text != msg {
		return &redactedError{msg: text, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Writer returns a writer that redacts each Write before passing it to w;
// w itself when r redacts nothing. Each Write is redacted on its own: the
// writers of whole values (a JSON encoder, an event a line) never split a
// key; streamed text is held back by its producer (see Longest).
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if r.Empty() {
		return w
	}
	return &writer{r: r, w: w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
