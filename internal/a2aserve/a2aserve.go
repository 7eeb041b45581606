// Package a2aserve serves the ensembles of `ensemble serve` to A2A (v1.0)
// agents, with the official SDK (github.com/a2aproject/a2a-go/v2): agent
// cards, and the JSON-RPC and HTTP+JSON (REST) bindings. A task is a run
// of serve's Runs (the task's id is the run's id), kept in the state
// database like every run; it is a thin adapter over Runs, as package
// mcpserve is, with no engine of its own.
//
// The routes (docs/serve.md#a2a):
//
//	GET  /.well-known/agent-card.json                   the server's card: a skill per ensemble (public)
//	GET  /a2a/ensembles/NAME/.well-known/agent-card.json an ensemble's card (public)
//	POST /a2a                                           JSON-RPC, every ensemble
//	     /a2a/rest/...                                  HTTP+JSON, every ensemble
//	POST /a2a/ensembles/NAME                            JSON-RPC, the ensemble NAME
//	     /a2a/ensembles/NAME/rest/...                   HTTP+JSON, the ensemble NAME
//
// Every route but the cards takes serve's token; all of them its Host
// check.
package a2aserve

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/ensemble-run/ensemble/serve"
	"github.com/ensemble-run/ensemble/store"
)

// Handler is the A2A endpoint of the ensembles runs serves.
type Handler struct {
	runs *serve.Runs
	x    *adapter
	mux  *http.ServeMux
	// endpoints are the bindings of each ensemble's own endpoint
	// (/a2a/ensembles/NAME), whose new tasks run that ensemble.
	endpoints map[string]bindings
}

// bindings are the JSON-RPC and HTTP+JSON handlers of one endpoint.
type bindings struct{ jsonrpc, rest http.Handler }

func newBindings(d *door) bindings {
	return bindings{jsonrpc: a2asrv.NewJSONRPCHandler(d), rest: a2asrv.NewRESTHandler(d)}
}

// New makes the A2A endpoint over runs, and the tables of its tasks in
// the state database when they are not there.
func New(runs *serve.Runs) (*Handler, error) {
	if err := runs.WithDB(func(db *store.DB) error { return db.InitTasks() }); err != nil {
		return nil, err
	}
	x := &adapter{runs: runs, follows: map[string]int{}, pending: map[string]int{}}
	tasks := &taskStore{x: x}
	runs.OnEnd(tasks.caughtUp)
	// The SDK's log would write push configs, credentials and all, to
	// stderr: what goes wrong reaches the client, or the run's events.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	inner := a2asrv.NewHandler(x, a2asrv.WithTaskStore(tasks), a2asrv.WithLogger(quiet),
		a2asrv.WithPushNotifications(&pushStore{x: x}, &pushSender{x: x}))
	all := newBindings(&door{RequestHandler: inner, x: x, tasks: tasks})
	h := &Handler{runs: runs, x: x, mux: http.NewServeMux(), endpoints: map[string]bindings{}}
	for _, e := range runs.Ensembles() {
		h.endpoints[e.Name] = newBindings(&door{RequestHandler: inner, x: x, tasks: tasks, endpoint: e.Name})
	}
	h.mux.Handle("POST /a2a", all.jsonrpc)
	h.mux.Handle("/a2a/rest/", http.StripPrefix("/a2a/rest", all.rest))
	h.mux.HandleFunc("POST /a2a/ensembles/{name}", h.ensemble(func(b bindings) http.Handler { return b.jsonrpc }))
	h.mux.HandleFunc("/a2a/ensembles/{name}/rest/", h.ensemble(func(b bindings) http.Handler { return b.rest }))
	h.mux.HandleFunc("GET /.well-known/agent-card.json", h.card)
	h.mux.HandleFunc("GET /a2a/ensembles/{name}/.well-known/agent-card.json", h.card)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "not_found", "no A2A route "+r.Method+" "+r.URL.Path+": see /.well-known/agent-card.json")
	})
	return h, nil
}

// Mount mounts the A2A endpoint on srv (before its Serve): its routes
// behind serve's token, its cards public.
func Mount(srv *serve.Server) error {
	h, err := New(srv.Runs())
	if err != nil {
		return err
	}
	srv.Handle("/a2a", h)
	srv.Handle("/a2a/", h)
	srv.HandlePublic("GET /.well-known/agent-card.json", h)
	srv.HandlePublic("GET /a2a/ensembles/{name}/.well-known/agent-card.json", h)
	return nil
}

// ServeHTTP serves the A2A routes; every reply goes out redacted.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(&redacting{ResponseWriter: w, redact: h.runs.Redact}, r)
}

// ensemble serves the request with the binding pick chooses of the
// endpoint of the path's ensemble: its messages start runs of it; its
// HTTP+JSON paths lose their prefix.
func (h *Handler) ensemble(pick func(bindings) http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		b, ok := h.endpoints[name]
		if !ok {
			fail(w, http.StatusNotFound, "not_found", "no ensemble "+name+" is served")
			return
		}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/a2a/ensembles/"+name+"/rest"); ok {
			u := *r.URL
			u.Path, u.RawPath = rest, ""
			r2 := *r
			r2.URL = &u
			r = &r2
		}
		pick(b).ServeHTTP(w, r)
	}
}

// card answers the server's agent card, or an ensemble's.
func (h *Handler) card(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host
	var c *a2a.AgentCard
	if name := r.PathValue("name"); name != "" {
		e := h.runs.Ensemble(name)
		if e == nil {
			fail(w, http.StatusNotFound, "not_found", "no ensemble "+name+" is served")
			return
		}
		c = newCard(name, describe(e.Name, e.Description), base+"/a2a/ensembles/"+name)
		c.Skills = []a2a.AgentSkill{skill(e.Name, e.Description)}
	} else {
		c = newCard("ensemble serve", "The ensembles this server runs, a skill each. A message names the ensemble "+
			"it runs in its metadata, {\"ensemble\": NAME}, or goes to the ensemble's own endpoint, "+
			"/a2a/ensembles/NAME (its card is at /a2a/ensembles/NAME/.well-known/agent-card.json).", base+"/a2a")
		for _, info := range h.runs.Ensembles() {
			c.Skills = append(c.Skills, skill(info.Name, info.Description))
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		fail(w, http.StatusInternalServerError, "internal", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

func describe(name, description string) string {
	if description != "" {
		return description
	}
	return "Runs the ensemble " + name + "."
}

func skill(name, description string) a2a.AgentSkill {
	return a2a.AgentSkill{ID: name, Name: name, Description: describe(name, description), Tags: []string{"ensemble"},
		InputModes: []string{"text/plain", "application/json"}, OutputModes: []string{"text/plain", "application/json"}}
}

// newCard is a card whose JSON-RPC endpoint is url, its HTTP+JSON one
// url/rest, behind serve's bearer token.
func newCard(name, description, url string) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name: name, Description: description, Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(url+"/rest", a2a.TransportProtocolHTTPJSON),
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		SecuritySchemes: a2a.NamedSecuritySchemes{"bearer": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "the token ensemble serve printed, or the one it was given (--token-file, $ENSEMBLE_SERVE_TOKEN)"}},
		SecurityRequirements: a2a.SecurityRequirementsOptions{{"bearer": {}}},
	}
}

// fail answers an error of the routes around the bindings (the bindings
// answer theirs as A2A does) in serve's one shape; ServeHTTP redacts it.
func fail(w http.ResponseWriter, status int, code, msg string) {
	var b serve.ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(b)
}

// redacting is a ResponseWriter that redacts what is written through it
// (each write whole: the SDK writes a reply, or an event of a stream, at
// once).
type redacting struct {
	http.ResponseWriter
	redact func(string) string
}

func (w *redacting) Write(b []byte) (int, error) {
	if _, err := w.ResponseWriter.Write([]byte(w.redact(string(b)))); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w *redacting) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *redacting) Unwrap() http.ResponseWriter { return w.ResponseWriter }
