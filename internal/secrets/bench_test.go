package secrets

import (
	"strings"
	"testing"
)

// BenchmarkRedactString redacts a 1 MB text that holds no key (the usual
// case: an agent's output) and one that holds a key in a few spellings.
func BenchmarkRedactString(b *testing.B) {
	key := "sk-proj-AbCdEf0123456789GhIjKlMnOpQrStUvWxYz"
	r := New(key)
	clean := strings.Repeat("the quick brown fox jumps over the lazy dog; session keys are secret. ", 15000)
	for _, c := range []struct{ name, text string }{
		{"no-key", clean},
		{"keys", clean + key + clean[:1000] + strings.ToUpper(key) + clean[:1000]},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				r.String(c.text)
			}
		})
	}
}
