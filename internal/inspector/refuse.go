package inspector

import (
	"net/http"
	"path"
	"slices"
	"strings"
)

// Every refusal of the API is a JSON object {"error": MESSAGE}
// (writeError), with its status: a path under /api/ that no route takes
// is a 404 too, never the mux's redirect or plain-text page, and a path
// that a route takes with another method a 405 naming them (Allow).

// isAPIPath reports whether p is the API's: /api, or under /api/.
func isAPIPath(p string) bool { return p == "/api" || strings.HasPrefix(p, "/api/") }

// uncleanAPIPath reports whether p, an API path, is one the mux would
// redirect to another (/api, "..", "//", a trailing slash): no route's.
func uncleanAPIPath(p string) bool {
	return p == "/api" || (p != "/api/" && path.Clean(p) != p)
}

// noSuchAPI answers a request under /api/ that no route of mux takes.
func noSuchAPI(mux *http.ServeMux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			if _, pattern := mux.Handler(&http.Request{Method: m, URL: r.URL, Host: r.Host}); pattern != "" && pattern != "/api/" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			writeError(w, http.StatusNotFound, "no such API: "+r.Method+" "+r.URL.Path)
			return
		}
		if slices.Contains(allow, http.MethodGet) {
			allow = append(allow, http.MethodHead)
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, r.URL.Path+" is read with "+strings.Join(allow, " or ")+", not "+r.Method)
	}
}
