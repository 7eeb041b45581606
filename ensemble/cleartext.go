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
// its Authorization header. A file warns of its own profiles; the top file
// also of those of profiles files that its agents call (a shared profiles
// file may hold many a file never uses).
func (d *decoder) clearKeyWarnings(e *Ensemble) []*Error {
	var out []*Error
	used := usedProfiles(e)
	names := make([]string, 0, len(e.Models))
	for name := range e.Models {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := e.Models[name]
		if p == nil || p.APIKeyEnv == "" || !sendsInClear(p.BaseURL) {
			continue
		}
		if own := p.File == d.file; !own && (d.top != "" || !used[name]) {
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

// modelUser is a kind whose agents call a model profile (the LLM kind).
type modelUser interface {
	ModelProfile(a *Agent) string
}

// usedProfiles are the profiles e's agents call, and their fallbacks.
func usedProfiles(e *Ensemble) map[string]bool {
	used := map[string]bool{}
	var add func(name string)
	add = func(name string) {
		if used[name] {
			return
		}
		used[name] = true
		if p := e.Models[name]; p != nil {
			for _, f := range p.Fallback {
				add(f)
			}
		}
	}
	for _, a := range e.Agents {
		if k, ok := a.Kind.(modelUser); ok {
			if name := k.ModelProfile(a); name != "" {
				add(name)
			}
		}
	}
	return used
}
