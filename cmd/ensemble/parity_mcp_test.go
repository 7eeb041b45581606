package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/mcpserve"
	"github.com/ensemble-run/ensemble/serve"
)

// mcpHTTP runs the case as a tool of /mcp on ensemble serve, with the
// go-sdk's client over Streamable HTTP. elicit: the client takes
// elicitation, and each question is answered there (by the agent the
// form names); otherwise each suspended result is answered with the
// ensemble_answer tool. The run's result is then read from the run API,
// and the last tool result must be what the run returns (its output, or
// its result JSON), an error result when the run failed.
func (p *parityRun) mcpHTTP(elicit bool) ([]byte, int, error) {
	if p.c.Record {
		return nil, 0, errors.New("serve has no --replay: a served ensemble runs live")
	}
	if p.c.Kill {
		return nil, 0, errNotApplicable
	}
	db := filepath.Join(p.dir, fmt.Sprintf("mcp-%v.db", elicit))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	const token = "parity-mcp-token"
	srv, err := serve.New(serve.Options{Paths: []string{p.c.Path()}, Listen: l.Addr().String(), State: db, Token: token,
		NoUI: true, LookupEnv: mapEnv(p.env(false))})
	if err != nil {
		l.Close()
		return nil, 0, err
	}
	srv.Handle("/mcp", mcpserve.Handler(srv.Runs()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	defer func() { cancel(); <-done }()
	opts := &mcp.ClientOptions{}
	if elicit {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			var schema struct {
				Properties struct{ Answer struct{ Title string } }
			}
			b, _ := json.Marshal(req.Params.RequestedSchema)
			json.Unmarshal(b, &schema)
			answer, ok := p.c.Answers[schema.Properties.Answer.Title]
			if !ok {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": answer}}, nil
		}
	}
	base := "http://" + l.Addr().String()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "parity", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		return nil, 0, err
	}
	defer cs.Close()
	infos := srv.Runs().Ensembles()
	if len(infos) != 1 {
		return nil, 0, fmt.Errorf("the ensembles served: %v", infos)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: infos[0].Name, Arguments: map[string]any{}})
	for asked := 0; err == nil && asked < 10; asked++ {
		var sus struct {
			Status string `json:"status"`
			RunID  string `json:"run_id"`
			Agent  string `json:"agent"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &sus)
		answer, ok := p.c.Answers[sus.Agent]
		if sus.Status != "suspended" || !ok {
			break
		}
		if elicit {
			return nil, 0, fmt.Errorf("a client that takes elicitation got a suspended result: %s", b)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ensemble_answer",
			Arguments: map[string]any{"run_id": sus.RunID, "agent": sus.Agent, "answer": answer}})
	}
	if err != nil {
		return nil, 0, err
	}
	list, _, err := srv.Runs().List("", "", "", 10)
	if err != nil || len(list) != 1 {
		return nil, 0, fmt.Errorf("the runs: %v %v", err, list)
	}
	id := list[0].ID
	api := &serveClient{base: base, token: token}
	got, err := api.call("GET", "/v1/runs/"+id, nil, nil)
	if err != nil {
		return nil, 0, err
	}
	sf, info, err := durable.Load(db, id)
	if err != nil {
		return nil, 0, err
	}
	code := durable.Result(sf, info).ExitCode()
	text := ""
	if len(res.Content) > 0 {
		text = res.Content[0].(*mcp.TextContent).Text
	}
	var r struct {
		Output json.RawMessage `json:"output"`
	}
	json.Unmarshal(got, &r)
	switch {
	case code != 0 && !res.IsError:
		return nil, 0, fmt.Errorf("run %s ended with exit code %d, and the tool result is no error: %s", id, code, text)
	case code == 0 && res.IsError:
		return nil, 0, errors.New(text)
	case code == 0 && len(r.Output) > 0 && !sameText(text, r.Output):
		return nil, 0, fmt.Errorf("the tool result %s is not the run's output %s", text, r.Output)
	}
	return got, code, nil
}

// bearerTransport sends the token of ensemble serve with every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
