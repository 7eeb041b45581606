package secrets

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

// A provider or a script may print a key in another spelling than its
// own: URL-escaped, base64-encoded at any offset of a longer text, in
// another case. Each is redacted.
func TestOtherSpellingsAreRedacted(t *testing.T) {
	t.Parallel()
	const key = "sk-Secret/Key+With=Chars123"
	r := New(key)
	b64 := func(enc *base64.Encoding, lead string) string {
		return enc.EncodeToString([]byte(lead + key + " and more"))
	}
	for name, text := range map[string]string{
		"query escape":       "GET /v1?key=" + url.QueryEscape(key) + "&x=1",
		"path escape":        "/keys/" + url.PathEscape(key) + "/",
		"lower-case escape":  strings.ToLower(url.QueryEscape(key)),
		"upper case":         "bad key " + strings.ToUpper(key),
		"lower case":         "bad key " + strings.ToLower(key) + ".",
		"base64":             "Basic " + base64.StdEncoding.EncodeToString([]byte(key)),
		"base64 of user:key": "Basic " + b64(base64.StdEncoding, "user:"),
		"base64 offset 1":    b64(base64.StdEncoding, "u"),
		"base64 offset 2":    b64(base64.StdEncoding, "us"),
		"base64 url":         b64(base64.URLEncoding, "ab"),
		"raw base64":         base64.RawStdEncoding.EncodeToString([]byte(key)),
	} {
		got := r.String(text)
		if !strings.Contains(got, Redacted) {
			t.Errorf("%s: %q is not redacted: %q", name, text, got)
		}
		for _, part := range []string{"Secret", "SECRET", "secret", "Chars123", "CHARS123"} {
			if strings.Contains(got, part) {
				t.Errorf("%s: %q still holds %q", name, got, part)
			}
		}
	}
	for _, text := range []string{"no key here", "sk-Secret/Key", "Basic dXNlcjpwYXNz"} {
		if got := r.String(text); got != text {
			t.Errorf("%q changed to %q", text, got)
		}
	}
	if got := New("sk-all-lower-case").String("KEY SK-ALL-LOWER-CASE."); got != "KEY "+Redacted+"." {
		t.Errorf("a key in lower case, upper-cased: %q", got)
	}
	if got := r.String("α SK-SECRET/KEY+WITH=CHARS123 ω"); got != "α "+Redacted+" ω" {
		t.Errorf("around other runes: %q", got)
	}
}
