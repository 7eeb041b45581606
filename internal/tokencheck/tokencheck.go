// Package tokencheck compares the secret a local server (`ensemble ui`,
// `ensemble serve`) was given with the one a request carries: the SHA-256
// sums of the two are compared, in constant time, so that neither the
// time taken nor a wrong token's length tells anything of the token.
package tokencheck

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Equal reports whether got is want. subtle.ConstantTimeCompare of the
// strings themselves returns at once when their lengths differ, which
// tells the length of want; the sums always have the same length.
func Equal(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
