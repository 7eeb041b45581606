//go:build !linux

package main

// hideEnviron does nothing here: other systems do not expose a process's
// environment to processes of the same user through /proc.
func hideEnviron() {}
