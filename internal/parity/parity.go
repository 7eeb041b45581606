// Package parity is the table of ensembles that the parity tests run
// through every front door of ensemble (run, resume, batch, test, mcp
// serve, serve and its chat and MCP endpoints, ui in cmd/ensemble; the Temporal worker, batch --temporal and
// serve --temporal in the temporal module), with what they need: a model server that speaks the
// OpenAI wire format, the test MCP server, and the comparison of results
// with times and ids aside. A front door that cannot run a case says so
// in a clear error, which the test pins (Case.Cannot). It is not an API.
package parity

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/fakemodel"
	"github.com/ensemble-run/ensemble/internal/mcptest"
)

// The front doors.
const (
	Run    = "run"
	Resume = "resume"
	Batch  = "batch"
	// BatchState is a batch saved with --state (a Kill case's batch is
	// always one).
	BatchState = "batch --state"
	Test       = "test"
	MCPServe   = "mcp serve"
	// UI is the inspector (ensemble ui): a saved run forked from turn 0
	// through its HTTP API, which goes on in its process.
	UI = "ui"
	// Serve is ensemble serve: the case started through its run API
	// (answered there when it waits; a Kill case's server killed with
	// SIGKILL and started again), its result read there.
	Serve    = "serve"
	Worker   = "worker"         // a run on Temporal (run --temporal)
	Temporal = "batch-temporal" // batch --temporal
	// ServeTemporal is ensemble serve --temporal: the case started and
	// answered through the run API, played by the Temporal workers.
	ServeTemporal = "serve --temporal"
	// Chat is ensemble serve's chat completions: the case's input as a
	// user message, each answer as the next message of the conversation.
	Chat = "serve chat"
	// MCPHTTP is /mcp on ensemble serve: the case called as a tool by a
	// client that takes elicitation (each question answered there);
	// MCPHTTPTools by one that does not (each suspended result answered
	// with the ensemble_answer tool).
	MCPHTTP      = "serve mcp"
	MCPHTTPTools = "serve mcp, answer tools"
	// A2A is ensemble serve's A2A endpoint: the case sent as a message by
	// the A2A SDK's client, each question (an input-required task)
	// answered by a message on the task.
	A2A = "serve a2a"
)

// Key is the API key of the secret case: no front door may show it.
const Key = "sk-parity-5e1d9a3c-never-shown"

// Case is one ensemble of the table.
type Case struct {
	Name string
	File string // in Dir
	// Answers are what the ask agents answer when the run waits for them.
	Answers map[string]string
	// Record: recorded against the model server, then replayed without it.
	Record bool
	// Kill: killed mid-run (a durable run), then resumed.
	Kill bool
	// Exit is the exit code of the run.
	Exit int
	// Cannot maps a front door that cannot run the case to a part of the
	// error it says so with (of the command, or in the run's result).
	Cannot map[string]string
}

// Cases are the table.
func Cases() []Case {
	const (
		batchAsks   = `asks a person, and the runs of a batch never ask`
		serveAsks   = `which needs a durable run`
		testModels  = `has no injected response and would call the real model`
		noRecording = `unknown flag: --replay`
		noBudget    = `a run on Temporal has no budget`
		noReplay    = `a run on Temporal is neither recorded nor replayed`
	)
	cases := []Case{
		{Name: "scripts", File: "scripts.yaml"},
		{Name: "mcp", File: "mcp.yaml", Cannot: map[string]string{Test: testModels}},
		{Name: "ask", File: "ask.yaml", Answers: map[string]string{"approver": `{"approved": true}`},
			Cannot: map[string]string{Batch: batchAsks, MCPServe: serveAsks, Temporal: batchAsks}},
		{Name: "fanout", File: "fanout.yaml"},
		{Name: "child", File: "child.yaml"},
		{Name: "when", File: "when.yaml"},
		{Name: "budget", File: "budget.yaml", Exit: 6, Cannot: map[string]string{Test: testModels, Worker: noBudget, Temporal: noBudget,
			ServeTemporal: noBudget}},
		{Name: "replay", File: "replay.yaml", Record: true,
			Cannot: map[string]string{Batch: noRecording, MCPServe: "no --replay", Serve: "no --replay", Chat: "no --replay",
				MCPHTTP: "no --replay", MCPHTTPTools: "no --replay", A2A: "no --replay", Worker: noReplay, Temporal: noRecording, ServeTemporal: "no --replay"}},
		{Name: "secret", File: "secret.yaml", Cannot: map[string]string{Test: testModels}},
		{Name: "kill", File: "kill.yaml", Kill: true,
			Cannot: map[string]string{Test: "no kill", MCPServe: "no kill", Chat: "no kill", MCPHTTP: "no kill", MCPHTTPTools: "no kill",
				A2A: "no kill", Temporal: "not killed here", ServeTemporal: "not killed here"}},
	}
	for _, c := range cases { // what a batch cannot do, a saved one cannot either
		if why, ok := c.Cannot[Batch]; ok {
			c.Cannot[BatchState] = why
		}
	}
	return cases
}

// Dir is the folder of the table's files, found from the working folder
// up (a test runs in its package's folder; the build may trim its paths).
func Dir() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		d := filepath.Join(dir, "internal", "parity", "testdata")
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		up := filepath.Dir(dir)
		if up == dir {
			panic("parity: no internal/parity/testdata above " + dir)
		}
		dir = up
	}
}

// Path is the case's ensemble file.
func (c Case) Path() string { return filepath.Join(Dir(), c.File) }

// Servers are the model server and the MCP server of the table, started
// for a test.
type Servers struct {
	Model *Model
	MCP   string // the test MCP server's URL (streamable HTTP)
}

// Start starts the servers until the test ends.
func Start(t testing.TB) *Servers {
	t.Helper()
	m := &Model{srv: fakemodel.New(t, reply)}
	return &Servers{Model: m, MCP: mcptest.HTTP(t)}
}

// Env is the environment of the table's runs: the servers' URLs and the
// key. Closed is the URL of a model server that is not there (a replay
// must not need it).
func (s *Servers) Env(closed bool) map[string]string {
	model := s.Model.URL()
	if closed {
		model = "http://127.0.0.1:1/v1"
	}
	return map[string]string{"PARITY_MODEL_URL": model, "PARITY_MCP_URL": s.MCP, "PARITY_KEY": Key}
}

// Model is a model server that speaks the OpenAI chat completions wire
// format. Its reply depends only on the request, as a deterministic model's
// would: a system prompt that starts with TOOL: calls the first tool
// offered with the last line of the last user message, then says what the
// tool said; one that starts with KEY: repeats the API key of the request,
// as it is and with its dashes JSON-escaped (sk\u002d…, which a JSON
// reader decodes back to the key);
// any other reply is the system prompt's first word and that line.
type Model struct{ srv *fakemodel.Server }

// URL is the base URL of its API.
func (m *Model) URL() string { return m.srv.URL() }

// Requests is how many requests it answered.
func (m *Model) Requests() int { return m.srv.Count() }

// ReplayPrompts are the prompts of the replay case's agents (replay.yaml),
// which no other case sends.
var ReplayPrompts = []string{"DRAFT: write.", "EDIT: improve."}

// RequestsHolding is how many of the requests it answered hold one of
// texts (a case's own prompts): the cases of the table share the server
// and run at once, so only what is a case's own counts for it.
func (m *Model) RequestsHolding(texts ...string) int {
	n := 0
	for _, r := range m.srv.Requests() {
		for _, text := range texts {
			if strings.Contains(r.Raw, text) {
				n++
				break
			}
		}
	}
	return n
}

// reply is the model's reply to r.
func reply(r fakemodel.Request) fakemodel.Reply {
	if len(r.Messages) == 0 {
		return fakemodel.Reply{Status: http.StatusBadRequest, Error: "bad request"}
	}
	last := r.Last()
	switch {
	case strings.HasPrefix(r.System, "TOOL:") && last.Role == "tool":
		return fakemodel.Reply{Text: "the tool said: " + last.Content}
	case strings.HasPrefix(r.System, "TOOL:") && len(r.Tools) > 0:
		args, _ := json.Marshal(map[string]string{"text": lastLine(r.LastUser())})
		return fakemodel.Reply{Calls: []fakemodel.Call{{Name: r.Tools[0], Args: string(args)}}}
	case strings.HasPrefix(r.System, "KEY:"):
		key := r.Auth()
		escaped := strings.ReplaceAll(key, "-", `\u002d`)
		return fakemodel.Reply{Text: "the key is " + key + `, in JSON {"key": "` + escaped + `"}`}
	}
	word, _, _ := strings.Cut(r.System, ":")
	return fakemodel.Reply{Text: fmt.Sprintf("%s saw %q", word, lastLine(r.LastUser()))}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// varying are the fields of a result that differ from run to run.
var varying = regexp.MustCompile(`"(timestamp|execution_time|duration_seconds|latency_ms)":\s*("[^"]*"|[0-9.e+-]+)`)

// ShowsKey reports whether s holds Key in any spelling: as it is, or with
// characters JSON-escaped (\u002d), however many times the text was
// escaped again (\\u002d in a result's JSON).
func ShowsKey(s string) bool {
	if strings.Contains(s, Key) {
		return true
	}
	return strings.Contains(unescape.ReplaceAllStringFunc(s, func(m string) string {
		r, _ := strconv.ParseUint(m[len(m)-4:], 16, 32)
		return string(rune(r))
	}), Key)
}

// unescape finds \uXXXX escapes, their backslash escaped any number of
// times.
var unescape = regexp.MustCompile(`\\+u[0-9a-fA-F]{4}`)

// Check holds what the front door door gave of case c (its result JSON
// got, its exit code, or err) to want, the normalised result of run: no
// key may show in either, and a door that cannot run the case must say so
// with the error the table pins.
func Check(t testing.TB, c Case, door, want string, got []byte, code int, err error) {
	t.Helper()
	if ShowsKey(string(got)) || err != nil && ShowsKey(err.Error()) {
		t.Errorf("%s shows the key:\n%s %v", door, got, err)
	}
	if pinned, cannot := c.Cannot[door]; cannot {
		if !(err != nil && strings.Contains(err.Error(), pinned) || err == nil && strings.Contains(string(got), pinned)) {
			t.Errorf("%s cannot run %s: want an error with %q, got %v\n%s", door, c.Name, pinned, err, got)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %v", door, err)
		return
	}
	if s := Normalize(t, got); s != want || code != c.Exit {
		t.Errorf("%s: exit %d\n%s\nwant (run), exit %d\n%s", door, code, s, c.Exit, want)
	}
}

// Normalize is a result JSON (as run --output json prints it) compact,
// its keys sorted, with times and durations aside, and the records of
// resumed ask agents as a run that was answered at once has them.
func Normalize(t testing.TB, result []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(result, &v); err != nil {
		t.Fatalf("not a result: %v\n%s", err, result)
	}
	b, err := json.Marshal(v) // compact, keys sorted
	if err != nil {
		t.Fatal(err)
	}
	return varying.ReplaceAllString(string(b), `"$1":0`)
}
