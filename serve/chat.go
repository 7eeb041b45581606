package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/readcap"
)

// The OpenAI-compatible endpoint (docs/serve.md#chat-completions): every
// served ensemble is a model, a chat completion is a run (or the answer to
// a run that waits), and errors come in OpenAI's shape. It is a front door
// over Runs like the run API, and behind the same guard.

// RunIDHeader names the run a chat completion started or continued (in a
// reply), or the run to continue (in a request).
const RunIDHeader = "X-Ensemble-Run-Id"

// chatRoutes adds the chat endpoint to mux.
func (s *Server) chatRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/models", s.chatModels)
	mux.HandleFunc("GET /v1/models/{name}", s.chatModel)
	mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
}

// chatError answers an error in OpenAI's shape.
func chatError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	body := map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nilIfEmpty(param), "code": nilIfEmpty(code)}}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// chatFail answers err in OpenAI's shape: an *Error with its status, a
// body over the cap with 413, anything else with 500; redacted.
func (s *Server) chatFail(w http.ResponseWriter, err error) {
	var e *Error
	var big *http.MaxBytesError
	switch {
	case errors.As(err, &e):
		typ := "invalid_request_error"
		switch e.Code {
		case CodeBusy:
			typ = "rate_limit_error"
		case CodeClosing:
			typ = "server_error"
		}
		chatError(w, statusOf[e.Code], typ, e.Code, "", s.runs.redact(e.Message))
	case errors.As(err, &big):
		chatError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "too_large", "",
			fmt.Sprintf("the body is over %d bytes (--max-body)", big.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded): // slowclient.go
		chatError(w, http.StatusRequestTimeout, "invalid_request_error", "timeout", "",
			fmt.Sprintf("the body did not arrive within %s", s.o.ReadTimeout))
	default:
		chatError(w, http.StatusInternalServerError, "server_error", "internal", "", s.runs.redact(err.Error()))
	}
}

// chatModel is a served ensemble as /v1/models lists it.
type chatModel struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Description string `json:"description,omitempty"`
}

func (s *Server) modelOf(e *ensemble.Ensemble) chatModel {
	m := chatModel{ID: e.Name, Object: "model", OwnedBy: "ensemble", Description: e.Description}
	if fi, err := os.Stat(e.Path); err == nil {
		m.Created = fi.ModTime().Unix()
	}
	return m
}

func (s *Server) chatModels(w http.ResponseWriter, r *http.Request) {
	data := make([]chatModel, 0, len(s.runs.list))
	for _, x := range s.runs.list {
		data = append(data, s.modelOf(x.e))
	}
	s.reply(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) chatModel(w http.ResponseWriter, r *http.Request) {
	e := s.runs.Ensemble(r.PathValue("name"))
	if e == nil {
		chatError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model",
			s.runs.redact(fmt.Sprintf("no ensemble %q is served", r.PathValue("name"))))
		return
	}
	s.reply(w, http.StatusOK, s.modelOf(e))
}

// chatMessage is a message of a request: its content a string, or a list
// of parts of which the text ones count.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is the message's text: a string content, or its text parts joined
// by newlines.
func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("a message's content is a string or a list of parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// chatRequest is the body of POST /v1/chat/completions; what else a
// client sends (temperature, tools, ...) is ignored.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Metadata map[string]string `json:"metadata"`
}

// turnText is a message as the conversation's hash sees it.
type turnText struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// conversationKey is the hash of a conversation: the roles and texts
// (trimmed) of its user and assistant messages. System and developer
// messages are left out: a client may change its own between requests.
func conversationKey(msgs []turnText) string {
	kept := make([]turnText, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "user" || m.Role == "assistant" {
			kept = append(kept, m)
		}
	}
	b, _ := json.Marshal(kept)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// The conversations that wait: STATE.serve/chat/HASH holds the id of the
// run that a conversation's last message (an ask agent's question) came
// from, so that a client that sends the conversation again with the
// answer continues it.
func (rs *Runs) chatDir() string { return filepath.Join(rs.j.dir, "chat") }

func (rs *Runs) rememberConversation(key, id string) error {
	dir := rs.chatDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(id)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, key))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func (rs *Runs) conversationRun(key string) string {
	b, err := readcap.ReadFile(filepath.Join(rs.chatDir(), key), 1024)
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	if !runIDPattern.MatchString(id) {
		return ""
	}
	return id
}

// chatTurn is what one chat completion did: the run, and the events of
// the run that came before it (an answered run's earlier ones).
type chatTurn struct {
	id     string
	before int
	model  string
	// convo is the request's conversation, to which the reply is added
	// when it is a question.
	convo []turnText
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.chatFail(w, err)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		chatError(w, http.StatusBadRequest, "invalid_request_error", "bad_request", "", "the body is not a chat completion request: "+err.Error())
		return
	}
	if req.Model == "" {
		chatError(w, http.StatusBadRequest, "invalid_request_error", "bad_request", "model", "give model, the name of a served ensemble (GET /v1/models lists them)")
		return
	}
	if s.runs.Ensemble(req.Model) == nil {
		chatError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model",
			s.runs.redact(fmt.Sprintf("no ensemble %q is served%s", req.Model, ensemble.Suggest(req.Model, s.runs.names()))))
		return
	}
	convo := make([]turnText, 0, len(req.Messages))
	last := -1
	for i, m := range req.Messages {
		text, err := m.text()
		if err != nil {
			chatError(w, http.StatusBadRequest, "invalid_request_error", "bad_request", fmt.Sprintf("messages[%d].content", i), err.Error())
			return
		}
		convo = append(convo, turnText{Role: m.Role, Text: strings.TrimSpace(text)})
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		chatError(w, http.StatusBadRequest, "invalid_request_error", "bad_request", "messages", "no user message: the last user message is the run's input")
		return
	}
	input := convo[last].Text
	// The run to continue: named, or the one whose question ends the
	// conversation before this message.
	id := r.Header.Get(RunIDHeader)
	if id == "" {
		id = req.Metadata["ensemble_run_id"]
	}
	named := id != ""
	if !named {
		id = s.runs.conversationRun(conversationKey(convo[:last]))
	}
	turn := chatTurn{model: req.Model, convo: convo}
	if id != "" {
		continued, err := s.chatContinue(id, req, input, named, &turn)
		if err != nil {
			s.chatFail(w, err)
			return
		}
		if !continued {
			id = ""
		}
	}
	if id == "" {
		text := input
		turn.id, _, err = s.runs.Start(r.Context(), req.Model, &text, StartOptions{Stream: req.Stream})
		if err != nil {
			s.chatFail(w, err)
			return
		}
	}
	w.Header().Set(RunIDHeader, turn.id)
	if req.Stream {
		s.chatStream(w, r, &turn, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	if _, err := s.runs.Wait(r.Context(), turn.id, s.o.MaxWait); err != nil {
		s.chatFail(w, err)
		return
	}
	out, err := s.chatOutcome(&turn)
	if err != nil {
		s.chatFail(w, err)
		return
	}
	if out.err != nil {
		chatError(w, out.status, out.errType, out.errCode, "", out.err.Error())
		return
	}
	s.reply(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-" + turn.id + "-" + fmt.Sprint(out.turns), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": out.text}}},
		"usage":    out.usage(),
		"metadata": map[string]string{"ensemble_run_id": turn.id, "ensemble_run_status": out.runStatus},
	})
}

// chatContinue gives input to the run id as the answer of the ask agent
// it waits for; continued is false when the run has ended (a new run
// starts) or, found by the conversation, is no longer there. A run named
// that is not there, or is another model's, is an error.
func (s *Server) chatContinue(id string, req chatRequest, input string, named bool, turn *chatTurn) (continued bool, err error) {
	info, err := s.runs.info(id)
	if err != nil {
		if named {
			return false, err
		}
		return false, nil
	}
	if info.Ensemble != req.Model {
		if named {
			return false, errorf(CodeBadRequest, "run %s is a run of %q, not of model %q", id, info.Ensemble, req.Model)
		}
		return false, nil
	}
	st := s.runs.status(id, info.CompletionReason)
	if st != engine.AwaitingInput {
		if st == StatusQueued || st == StatusRunning {
			return false, errorf(CodeConflict, "run %s is %s: it waits for no answer now (an answer was given already)", id, st)
		}
		return false, nil // it has ended: a new run
	}
	res, _, err := s.runs.chatResult(id)
	if err != nil {
		return false, err
	}
	if len(res.PendingInput) == 0 {
		return false, errorf(CodeConflict, "run %s waits, but for no question its ensemble file has now (the file changed)", id)
	}
	evs, _, _, _, err := s.runs.Events(id, 0)
	if err != nil {
		return false, err
	}
	turn.id, turn.before = id, len(evs)
	given := map[string]string{res.PendingInput[0].Agent: input}
	if req.Stream {
		s.runs.streamNext.Store(id, true)
		defer s.runs.streamNext.Delete(id)
	}
	return true, s.runs.Answer(id, given, 0)
}

// chatResult is run id's result as of its last saved turn, with the
// ensemble's output set, and its ensemble (nil when its file does not
// load now).
func (rs *Runs) chatResult(id string) (*engine.Result, *ensemble.Ensemble, error) {
	info, err := rs.info(id)
	if err != nil {
		return nil, nil, err
	}
	rs.rd.Hold()
	sf, err := rs.rd.Load(info)
	rs.rd.Release()
	if err != nil {
		return nil, nil, err
	}
	res := rs.resultOf(sf, info)
	e := rs.ensembleOf(sf)
	if e != nil {
		res.SetOutput(e)
	}
	return res, e, nil
}

// outcome is what a chat completion answers once its run has ended or
// suspended.
type outcome struct {
	text      string // the assistant's message
	runStatus string
	turns     int
	res       *engine.Result
	// err, when set, is answered instead, with status, errType, errCode.
	err              error
	status           int
	errType, errCode string
}

func (o *outcome) usage() map[string]int {
	u := o.res.Usage
	return map[string]int{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens}
}

// chatOutcome reads what turn's run came to: its output as text (the
// output: agent's, a string as it is and anything else as JSON; the whole
// final state's JSON without output:), the question it waits on (then
// remembered for the conversation), or its error.
func (s *Server) chatOutcome(turn *chatTurn) (*outcome, error) {
	res, e, err := s.runs.chatResult(turn.id)
	if err != nil {
		return nil, err
	}
	out := &outcome{res: res, turns: res.TurnCount, runStatus: s.runs.status(turn.id, res.CompletionReason)}
	fail := func(status int, typ, code, format string, args ...any) (*outcome, error) {
		out.err = errors.New(s.runs.redact(fmt.Sprintf(format, args...)))
		out.status, out.errType, out.errCode = status, typ, code
		return out, nil
	}
	switch out.runStatus {
	case StatusQueued, StatusRunning:
		return fail(http.StatusGatewayTimeout, "server_error", "timeout",
			"run %s has not ended after %s: follow it at /v1/runs/%s", turn.id, s.o.MaxWait, turn.id)
	case engine.AwaitingInput:
		if len(res.PendingInput) == 0 {
			return fail(http.StatusInternalServerError, "server_error", "run_failed", "run %s waits, but for no question its ensemble file has now (the file changed)", turn.id)
		}
		out.text = s.runs.redact(res.PendingInput[0].Question)
		key := conversationKey(append(turn.convo[:len(turn.convo):len(turn.convo)], turnText{Role: "assistant", Text: strings.TrimSpace(out.text)}))
		if err := s.runs.rememberConversation(key, turn.id); err != nil {
			s.runs.logf("run %s: the conversation: %s", turn.id, err)
		}
		return out, nil
	}
	if res.ExitCode() != engine.ExitOK {
		msg := "the run ended: " + res.CompletionReason
		for _, x := range res.Errors {
			if !x.Handled {
				msg += ": " + x.AgentName + ": " + x.Message
				break
			}
		}
		return fail(http.StatusInternalServerError, "server_error", "run_failed", "run %s failed (%s)", turn.id, msg)
	}
	if e != nil && e.Output != "" {
		if res.Output == nil {
			return fail(http.StatusInternalServerError, "server_error", "run_failed",
				"run %s completed, but its output agent %q has no output", turn.id, e.Output)
		}
		out.text = s.runs.redact(jsonvalue.Text(res.Output))
		return out, nil
	}
	b, err := json.Marshal(res.FinalState)
	if err != nil {
		return nil, err
	}
	out.text = string(s.runs.redactBytes(b))
	return out, nil
}

// chatStream answers turn as a stream of chat.completion.chunk events:
// the output agent's text deltas as its model writes them (a run that
// streams its model replies), then what the deltas did not carry of the
// outcome (all of it when the output agent is a script, or without
// output:), the finish, the usage when asked for, and [DONE]. An error
// once the stream has begun is an event {"error": {...}} before the end.
func (s *Server) chatStream(w http.ResponseWriter, r *http.Request, turn *chatTurn, includeUsage bool) {
	flusher := startSSE(w)
	created := time.Now().Unix()
	cid := "chatcmpl-" + turn.id + "-" + fmt.Sprint(turn.before)
	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", s.runs.redactBytes(b)); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": cid, "object": "chat.completion.chunk", "created": created, "model": turn.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	output := ""
	// Deltas are passed on when they are the output's text: an output
	// agent's with no output_schema, and no fan-out (whose output is a
	// list).
	if e := s.runs.Ensemble(turn.model); e != nil {
		if a := e.OutputAgent(); a != nil && a.OutputSchema == nil && a.FanOut == nil {
			output = a.Name
		}
	}
	streamed := ""
	deadline := time.NewTimer(s.o.MaxWait)
	defer deadline.Stop()
	ok := s.follow(w, r, flusher, turn.id, turn.before, deadline.C, func(_ int, evs [][]byte) bool {
		for _, b := range evs {
			var ev struct {
				Type    string `json:"type"`
				Agent   string `json:"agent"`
				Message string `json:"message"`
			}
			if json.Unmarshal(b, &ev) != nil || ev.Type != "text_delta" || output == "" || ev.Agent != output || ev.Message == "" {
				continue
			}
			streamed += ev.Message
			if !send(chunk(map[string]any{"content": ev.Message}, nil)) {
				return false
			}
		}
		return true
	})
	if !ok {
		return
	}
	out, err := s.chatOutcome(turn)
	if err != nil {
		out = &outcome{err: errors.New(s.runs.redact(err.Error())), errType: "server_error", errCode: "internal"}
	}
	if out.err != nil {
		send(map[string]any{"error": map[string]any{"message": out.err.Error(), "type": out.errType, "code": out.errCode, "param": nil}})
		return
	}
	// What the deltas did not carry: the rest of the output, or all of it
	// after a blank line when it is not what they made (the agent ran
	// again, or its reply was made to fit its schema).
	rest := out.text
	if streamed != "" {
		if after, ok := strings.CutPrefix(out.text, streamed); ok {
			rest = after
		} else {
			rest = "\n\n" + out.text
		}
	}
	if rest != "" && !send(chunk(map[string]any{"content": rest}, nil)) {
		return
	}
	fin := chunk(map[string]any{}, "stop")
	fin["metadata"] = map[string]string{"ensemble_run_id": turn.id, "ensemble_run_status": out.runStatus}
	if !send(fin) {
		return
	}
	if includeUsage {
		if !send(map[string]any{"id": cid, "object": "chat.completion.chunk", "created": created, "model": turn.model,
			"choices": []any{}, "usage": out.usage()}) {
			return
		}
	}
	io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}
