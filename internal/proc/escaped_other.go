//go:build !linux

package proc

// killEscaped finds nothing where there is no /proc to search.
func killEscaped(string) int { return 0 }
