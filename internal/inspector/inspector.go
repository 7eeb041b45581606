// Package inspector is `ensemble ui` (docs/ui.md): a web page, served from
// the binary, that shows the runs of state databases, a run's graph, its
// turns and each execution, answers a run that waits for a person and forks
// a run from a turn. The page is plain HTML, CSS and JavaScript embedded
// from web/ (no build step, nothing fetched from elsewhere); it reads the
// runs through the JSON API of api.go, a page of turns at a time.
//
// Only the databases of Options.DBs are served: a request names one by its
// index, never by a path. Every request of the API needs the server's token
// (the URL it prints holds it), and a Host header that is an IP address,
// localhost or the name it listens on (no DNS rebinding).
package inspector

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/hostcheck"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/internal/tokencheck"
	"github.com/ensemble-run/ensemble/store"
)

//go:embed web
var webFS embed.FS

// Options configure a Server.
type Options struct {
	// DBs are the state databases served, in order: the API names each by
	// its index.
	DBs []string
	// Listen is the address the server listens on, "host:port"; its host
	// is accepted in the Host header beside IP addresses and localhost.
	Listen string
	// Token is the secret every API request carries (header
	// X-Ensemble-Token, or ?token=); "" makes a random one.
	Token string
	// LookupEnv reads the environment (profiles, secrets to redact,
	// $ENSEMBLE_STATE_SYNC); nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Stderr receives what runs resumed or forked in the background
	// report beyond their state (nil: discarded).
	Stderr io.Writer
	// GoOn, when set, goes on with the runs answered and forked from the
	// page (of the one database served) in place of the inspector.
	GoOn GoOn
	// Hosts are more host names the Host header may name (the names
	// clients reach a server by, which ensemble serve is told).
	Hosts []string
}

// Server serves the inspector of a set of state databases.
type Server struct {
	opts  Options
	token string
	dbs   []*database
	sync  store.Sync

	// ctx is the life of the runs started in the background (answers,
	// forks); Close cancels it and waits for them.
	ctx    context.Context
	cancel context.CancelFunc
	runs   sync.WaitGroup

	mu       sync.Mutex
	tallies  map[string]*store.Tally   // db/id → the run's totals, added to as it grows
	counting map[string]bool           // db/id → its totals are being counted in the background
	jobs     map[string]*job           // db/id → the run this server resumes in the background
	redact   *secrets.Redactor         // every secret the loaded ensembles name, from the environment
	keys     map[string]bool           // the secrets' values redact holds
	graphs   map[string]*graphCacheRow // ensemble path → its graph, by the file's hash
	codes    map[string]time.Time      // one-time codes (code.go) → when they expire
}

// database is one served state database, open for reading; mu serialises
// its use (a store.DB runs one statement at a time).
type database struct {
	path string
	mu   sync.Mutex
	db   *store.DB
}

// New opens the databases of opts (each must be a state database: a path
// that is not one is an error naming it) and returns their server.
func New(opts Options) (*Server, error) {
	if len(opts.DBs) == 0 {
		return nil, errors.New("no state database to serve: name one or more (run --state FILE writes one)")
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	sync, err := durable.SyncFrom(opts.LookupEnv)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, token: opts.Token, sync: sync, tallies: map[string]*store.Tally{}, counting: map[string]bool{}, jobs: map[string]*job{},
		keys: map[string]bool{}, graphs: map[string]*graphCacheRow{}}
	if s.token == "" {
		var b [16]byte
		rand.Read(b[:])
		s.token = hex.EncodeToString(b[:])
	}
	for _, p := range opts.DBs {
		if durable.IsJSONFile(p) {
			s.closeDBs()
			what := "a JSON state file"
			if data, err := ensemble.ReadFile(p); err == nil && ensemble.LooksLikeEnsemble(data) {
				what = "an ensemble file, not a state file"
			}
			return nil, fmt.Errorf("%s is %s: the inspector reads state databases (a run with --state FILE.db writes one)", p, what)
		}
		db, err := store.Open(p, false, store.SyncNormal)
		if err != nil {
			s.closeDBs()
			return nil, err
		}
		s.dbs = append(s.dbs, &database{path: p, db: db})
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Token is the server's token.
func (s *Server) Token() string { return s.token }

// URL is the address of the page for a server listening at addr
// ("127.0.0.1:8080"), with the token.
func (s *Server) URL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/", RawQuery: "token=" + url.QueryEscape(s.token)}
	return u.String()
}

// Serve serves the page and its API on l until ctx is done, then stops the
// runs it started in the background (they are saved as interrupted, and
// resume goes on with them).
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if s.opts.Listen == "" {
		s.opts.Listen = l.Addr().String()
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		s.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return s.Close()
}

// Close stops the runs started in the background, waits for them, and
// closes the databases.
func (s *Server) Close() error {
	s.cancel()
	s.runs.Wait()
	return s.closeDBs()
}

func (s *Server) closeDBs() error {
	var errs []error
	for _, d := range s.dbs {
		d.mu.Lock()
		if d.db != nil {
			errs = append(errs, d.db.Close())
			d.db = nil
		}
		d.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Handler is the server's HTTP handler: the page's files at /, the API
// under /api/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	web, _ := fs.Sub(webFS, "web")
	files := http.FileServerFS(web)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusMethodNotAllowed, "the page's files are read with GET")
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		files.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /api/runs", s.apiRuns)
	mux.HandleFunc("GET /api/run", s.apiRun)
	mux.HandleFunc("GET /api/run/turns", s.apiTurns)
	mux.HandleFunc("GET /api/run/execution", s.apiExecution)
	mux.HandleFunc("GET /api/run/search", s.apiSearch)
	mux.HandleFunc("GET /api/run/across", s.apiAcross)
	mux.HandleFunc("POST /api/run/answer", s.apiAnswer)
	mux.HandleFunc("POST /api/run/fork", s.apiFork)
	mux.HandleFunc("POST /auth/code", s.apiCode)
	s.testRoutes(mux)
	mux.HandleFunc("/api/", noSuchAPI(mux)) // refuse.go
	return s.guard(mux)
}

// guard refuses a request whose Host header names another host than this
// server's (DNS rebinding), and an API request without the token. The
// page's own files carry no data: they are served without the token.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("Host %q is not this server's: open it by its address", r.Host))
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		if isAPIPath(r.URL.Path) {
			tok := r.Header.Get("X-Ensemble-Token")
			if tok == "" {
				tok = r.URL.Query().Get("token")
			}
			if tok == "" {
				tok = s.cookieToken(r)
			}
			if !tokencheck.Equal(tok, s.token) { // the sums: a wrong token's length tells nothing
				writeError(w, http.StatusForbidden, "missing or wrong token: open the URL ui printed, with its ?token=")
				return
			}
			if uncleanAPIPath(r.URL.Path) {
				writeError(w, http.StatusNotFound, "no such API: "+r.Method+" "+r.URL.Path)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy lets the page load its own files only, and run no
// inline script or style (the page sets styles through the DOM, which the
// policy allows), nor be framed, nor submit a form anywhere.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// hostAllowed reports whether host (a Host header) names this server
// (hostcheck.Allowed), against DNS rebinding.
func (s *Server) hostAllowed(host string) bool {
	return hostcheck.Allowed(host, s.opts.Listen, s.opts.Hosts)
}
