package secrets

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
)

// The other spellings of a key that a provider or a script may print: a
// provider echoes a key in an error message URL-escaped (it was in a query
// string), base64-encoded (it was in a Basic authorization header), or in
// another case (a message that upper-cases what it quotes).

// encodedSpellings are the spellings of key matched exactly besides itself
// and its JSON form: its URL escapes and the parts of its base64 encodings
// that hold only bits of the key, wherever it starts in the encoded bytes.
func encodedSpellings(key string) []string {
	out := []string{url.QueryEscape(key), url.PathEscape(key)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString([]byte(key))) // padded: the key alone
		for lead := range 3 {
			out = append(out, base64Core(enc, key, lead))
		}
	}
	return out
}

// base64Core is the part of the base64 encoding of key, preceded by lead
// other bytes and followed by any, whose characters depend on the key's
// bits alone: the same in every text that encodes the key at that offset.
func base64Core(enc *base64.Encoding, key string, lead int) string {
	data := make([]byte, lead+len(key))
	copy(data[lead:], key)
	s := enc.EncodeToString(data)
	start := (8*lead + 5) / 6        // the first character after the lead's bits
	end := 8 * (lead + len(key)) / 6 // the characters before the first bit after the key
	return s[start:end]
}

// foldable are the spellings matched in any case: the key and its URL
// escapes (whose hex digits a server may write in lower case), when they
// hold a letter. Case is folded in ASCII only, as a provider upper-casing
// a message does to a key (keys are ASCII).
func foldable(key string) []folded {
	var out []folded
	for _, s := range []string{key, url.QueryEscape(key), url.PathEscape(key)} {
		hasLetter := strings.IndexFunc(s, func(r rune) bool { return r < 128 && isLetter(byte(r)) }) >= 0
		f := foldOf(s)
		if hasLetter && !slices.ContainsFunc(out, func(o folded) bool { return o.lower == f.lower }) {
			out = append(out, f)
		}
	}
	return out
}

// folded is a spelling matched in any ASCII case: lower, the spelling in
// lower case; anchor, the offset of a byte that is no letter (searched
// for as it is, fast), or -1 when every byte is a letter.
type folded struct {
	lower  string
	anchor int
}

func foldOf(s string) folded {
	b := []byte(s)
	f := folded{anchor: -1}
	for i, c := range b {
		b[i] = lowerASCII(c)
		if f.anchor < 0 && !isLetter(c) {
			f.anchor = i
		}
	}
	f.lower = string(b)
	return f
}

// replace replaces in s every match of f in any ASCII case: s itself when
// there is none.
func (f folded) replace(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is written
	for start := f.next(s, 0); start >= 0; start = f.next(s, start) {
		if !foldsTo(s[start:], f.lower) {
			start++
			continue
		}
		b.WriteString(s[done:start])
		b.WriteString(Redacted)
		done = start + len(f.lower)
		start = done
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// next is the first offset at or after from where f may start, or -1.
func (f folded) next(s string, from int) int {
	if len(s)-from < len(f.lower) {
		return -1
	}
	if f.anchor >= 0 {
		i := strings.IndexByte(s[from+f.anchor:], f.lower[f.anchor])
		if i < 0 {
			return -1
		}
		return from + i
	}
	lo, up := f.lower[0], f.lower[0]-'a'+'A'
	i, j := strings.IndexByte(s[from:], lo), strings.IndexByte(s[from:], up)
	if i < 0 || (j >= 0 && j < i) {
		i = j
	}
	if i < 0 {
		return -1
	}
	return from + i
}

// foldsTo reports whether s starts with lower in any ASCII case.
func foldsTo(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for k := range len(lower) {
		if lowerASCII(s[k]) != lower[k] {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return lowerASCII(c) != c || ('a' <= c && c <= 'z') }

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
