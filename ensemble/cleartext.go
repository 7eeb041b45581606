package ensemble

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// clearKeyWarnings warn of a profile that sends its key over plain http to
// a host that is not this machine: anyone on the path reads the key in
// its Authorization header. The top file warns of every profile it runs
// with (its own and those of profiles files), a child of its own only.
func (d *decoder) clearKeyWarnings(e *Ensemble) []*Error {
	var out []*Error
	names := make([]string, 0, len(e.Models))
	for name := range e.Models {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := e.Models[name]
		if p == nil || p.APIKeyEnv == "" || !sendsInClear(p.BaseURL) || (d.top != "" && p.File != d.file) {
			continue
		}
		u, _ := url.Parse(p.BaseURL)
		w := &Error{File: p.File, Line: p.Pos.Line, Column: p.Pos.Column, Message: fmt.Sprintf(
			"model profile %q sends its key ($%s) over plain http to %s: anyone on the way can read it; use https, or a server on this machine",
			name, p.APIKeyEnv, u.Host)}
		if p.File == d.file {
			w = d.warningAt(p.Pos, w.Message)
		}
		out = append(out, w)
	}
	return out
}

// sendsInClear reports whether base is an http:// URL of a host other
// than this machine (localhost, a loopback address).
func sendsInClear(base string) bool {
	u, err := url.Parse(base)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
