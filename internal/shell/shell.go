// Package shell quotes words for a POSIX shell: the paths and ids in the
// commands that the hints of refusals suggest.
package shell

import "strings"

// Quote returns s as one word of a POSIX shell: as it is when it holds
// only characters no shell treats specially, in single quotes otherwise.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+,:@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
