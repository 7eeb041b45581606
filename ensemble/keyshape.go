package ensemble

import "strings"

// keyPrefixes begin the keys of common providers and code hosts; none
// begins a variable's name in upper case, as variables holding keys are
// named (OPENAI_API_KEY).
var keyPrefixes = []string{"sk-", "sk_", "gsk_", "hf_", "xai-", "AIza", "pk_", "rk_", "ghp_", "github_pat_", "glpat-"}

// looksLikeKey reports whether api_key_env's value s is a key written in
// its place rather than the name of the variable holding one. Some keys
// (Groq's gsk_…, Hugging Face's hf_…) are valid variable names: taken as
// one, the key would be echoed by every "variable … is not set". A name
// starting as a key does, or one of 24 bytes or more mixing lower and upper
// case with digits, is taken for a key.
func looksLikeKey(s string) bool {
	for _, p := range keyPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	if len(s) < 20 {
		return false
	}
	if !envNamePattern.MatchString(s) {
		return true // a long value that is no name: the check this replaces
	}
	lower := strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz")
	upper := strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	digit := strings.ContainsAny(s, "0123456789")
	return len(s) >= 24 && lower && upper && digit
}
