package inspector

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/ensemble-run/ensemble/internal/tokencheck"
)

// A one-time code hands the token to a browser that ui --open starts
// without putting the token on the opener's command line, which every
// local user can read (/proc/PID/cmdline): the page is opened with
// ?code=CODE, and exchanges the code (POST /auth/code) for a cookie that
// holds the token, HttpOnly and SameSite=Strict. A code is random, works
// once, and expires after codeLife.

// codeLife is how long a one-time code can be exchanged.
const codeLife = 2 * time.Minute

// OneTimeCode is a new code that /auth/code exchanges, once, within
// codeLife, for the cookie of the token.
func (s *Server) OneTimeCode() string {
	var b [16]byte
	rand.Read(b[:])
	code := hex.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codes == nil {
		s.codes = map[string]time.Time{}
	}
	now := time.Now()
	for c, until := range s.codes {
		if now.After(until) {
			delete(s.codes, c)
		}
	}
	s.codes[code] = now.Add(codeLife)
	return code
}

// OpenURL is the address of the page for a server listening at addr, with
// a one-time code in place of the token: what a browser is started on.
func (s *Server) OpenURL(addr string) string {
	u, _ := url.Parse(s.URL(addr))
	u.RawQuery = url.Values{"code": {s.OneTimeCode()}}.Encode()
	return u.String()
}

// takeCode reports whether code is a live one-time code, and spends it.
func (s *Server) takeCode(code string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	found := ""
	for c, until := range s.codes {
		// compared in constant time, every code
		if tokencheck.Equal(code, c) && !now.After(until) {
			found = c
		}
	}
	if found == "" {
		return false
	}
	delete(s.codes, found)
	return true
}

// cookieName is the name of the token's cookie for a server reached at
// host: a browser keeps cookies by host, not by port, so two servers on
// one host each have their own.
func cookieName(host string) string {
	_, port, err := net.SplitHostPort(host)
	if err != nil || port == "" {
		port = "80"
	}
	return "ensemble-token-" + port
}

// cookieHeader is the header the page sends with a request that the cookie
// authenticates: another page, even of the same site (another port of
// 127.0.0.1), cannot send it without the browser asking this server first
// (a CORS preflight), which it never allows.
const cookieHeader = "X-Ensemble-Cookie"

// apiCode exchanges a one-time code for the token's cookie.
func (s *Server) apiCode(w http.ResponseWriter, r *http.Request) {
	if !s.takeCode(r.URL.Query().Get("code")) {
		writeError(w, http.StatusForbidden, "this link was used already, has expired or is wrong: open the URL ui printed, with its ?token=")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(r.Host), Value: s.token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// cookieToken is the token of the request's cookie, when the page sent it
// with cookieHeader; "".
func (s *Server) cookieToken(r *http.Request) string {
	if r.Header.Get(cookieHeader) == "" {
		return ""
	}
	c, err := r.Cookie(cookieName(r.Host))
	if err != nil {
		return ""
	}
	return c.Value
}
