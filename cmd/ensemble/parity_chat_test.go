package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/serve"
)

// chatted runs the case through ensemble serve's chat completions, as a
// chat client would: the file's input as the user message; while the run
// waits, the question it answers with is followed by the case's answer as
// the next user message, the conversation sent again whole (the server
// finds the run it continues by the conversation). The result is then
// read from the run API, and the last reply must be what the run returns
// (its output, or its final state), or an error when the run failed.
func (p *parityRun) chatted() ([]byte, int, error) {
	if p.c.Record {
		return nil, 0, errors.New("serve has no --replay: a served ensemble runs live")
	}
	if p.c.Kill {
		return nil, 0, errNotApplicable
	}
	db := filepath.Join(p.dir, "chat.db")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	const token = "parity-chat-token"
	srv, err := serve.New(serve.Options{Paths: []string{p.c.Path()}, Listen: l.Addr().String(), State: db, Token: token,
		NoUI: true, LookupEnv: mapEnv(p.env(false))})
	if err != nil {
		l.Close()
		return nil, 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	defer func() { cancel(); <-done }()
	api := &serveClient{base: "http://" + l.Addr().String(), token: token}
	var list struct{ Ensembles []serve.EnsembleInfo }
	if _, err := api.call("GET", "/v1/ensembles", nil, &list); err != nil || len(list.Ensembles) != 1 {
		return nil, 0, fmt.Errorf("the ensembles served: %v %v", err, list.Ensembles)
	}
	model := list.Ensembles[0].Name
	msgs := []map[string]string{{"role": "user", "content": list.Ensembles[0].Input}}
	for asked := 0; ; asked++ {
		var reply struct {
			Choices []struct {
				Message struct{ Content string }
			}
		}
		id := ""
		_, chatErr := api.call("POST", "/v1/chat/completions", map[string]any{"model": model, "messages": msgs}, &reply,
			func(h http.Header) { id = h.Get(serve.RunIDHeader) })
		if id == "" {
			return nil, 0, fmt.Errorf("no run: %v", chatErr)
		}
		var status string
		res, err := api.call("GET", "/v1/runs/"+id, nil, nil, func(h http.Header) { status = h.Get("Ensemble-Run-Status") })
		if err != nil {
			return nil, 0, err
		}
		var r struct {
			PendingInput []struct{ Agent string } `json:"pending_input"`
			Output       json.RawMessage          `json:"output"`
			FinalState   json.RawMessage          `json:"final_state"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return nil, 0, err
		}
		if status == "awaiting_input" && chatErr == nil && len(r.PendingInput) > 0 && asked < 10 {
			answer, ok := p.c.Answers[r.PendingInput[0].Agent]
			if ok && len(reply.Choices) == 1 {
				msgs = append(msgs, map[string]string{"role": "assistant", "content": reply.Choices[0].Message.Content},
					map[string]string{"role": "user", "content": answer})
				continue
			}
		}
		sf, info, err := durable.Load(db, id)
		if err != nil {
			return nil, 0, err
		}
		code := durable.Result(sf, info).ExitCode()
		switch {
		case code != 0 && chatErr == nil:
			return nil, 0, fmt.Errorf("run %s ended with exit code %d, and the chat reply is no error", id, code)
		case code == 0 && chatErr != nil:
			return nil, 0, chatErr
		case code == 0:
			want := r.FinalState
			if len(r.Output) > 0 {
				want = r.Output
			}
			if len(reply.Choices) != 1 || !sameText(reply.Choices[0].Message.Content, want) {
				return nil, 0, fmt.Errorf("the chat reply %+v is not what the run returns, %s", reply.Choices, want)
			}
		}
		return res, code, nil
	}
}

// sameText reports whether text is what the JSON value want is as a chat
// reply: a string as it is, anything else as its JSON.
func sameText(text string, want json.RawMessage) bool {
	var s string
	if json.Unmarshal(want, &s) == nil {
		return text == s
	}
	var a, b any
	return json.Unmarshal(want, &a) == nil && json.Unmarshal([]byte(text), &b) == nil && reflect.DeepEqual(a, b)
}
