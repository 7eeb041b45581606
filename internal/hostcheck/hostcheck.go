// Package hostcheck is the Host header check of the local web servers
// (`ensemble ui`, `ensemble serve`) against DNS rebinding: a page of
// another site whose name an attacker points at 127.0.0.1 reaches the
// server with that name in Host, and is refused.
package hostcheck

import (
	"net"
	"strings"
)

// Allowed reports whether host (a Host header) names a server listening
// on listen (HOST:PORT): an IP address (a DNS rebinding attack needs a
// name), localhost, the host it listens on, or one of names.
func Allowed(host, listen string, names []string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil || strings.EqualFold(h, "localhost") {
		return true
	}
	if lh, _, err := net.SplitHostPort(listen); err == nil && lh != "" && strings.EqualFold(h, lh) {
		return true
	}
	for _, name := range names {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}
