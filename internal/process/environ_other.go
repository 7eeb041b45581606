//go:build !linux

package process

// HideEnviron does nothing here: other systems do not expose a process's
// environment to processes of the same user through /proc.
func HideEnviron() {}
