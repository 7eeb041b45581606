package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/internal/a2aserve"
	"github.com/ensemble-run/ensemble/serve"
)

// a2a runs the case through the A2A endpoint of ensemble serve with the
// A2A SDK's client: the ensemble's card read, the case's input sent as a
// message, and each question (an input-required task) answered by a
// message on the task, with the answer of the agent its data part names.
// The run's result is then read from the run API; the task must be
// completed for a run that succeeded (its artifact the run's output, when
// the file names one), failed otherwise.
func (p *parityRun) a2a() ([]byte, int, error) {
	if p.c.Record {
		return nil, 0, errors.New("serve has no --replay: a served ensemble runs live")
	}
	if p.c.Kill {
		return nil, 0, errNotApplicable
	}
	db := filepath.Join(p.dir, "a2a.db")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	const token = "parity-a2a-token"
	srv, err := serve.New(serve.Options{Paths: []string{p.c.Path()}, Listen: l.Addr().String(), State: db, Token: token,
		NoUI: true, LookupEnv: mapEnv(p.env(false))})
	if err != nil {
		l.Close()
		return nil, 0, err
	}
	if err := a2aserve.Mount(srv); err != nil {
		l.Close()
		srv.Runs().Close(0)
		return nil, 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	defer func() { cancel(); <-done }()
	base := "http://" + l.Addr().String()
	infos := srv.Runs().Ensembles()
	if len(infos) != 1 {
		return nil, 0, fmt.Errorf("the ensembles served: %v", infos)
	}
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(ctx, base,
		agentcard.WithPath("/a2a/ensembles/"+infos[0].Name+"/.well-known/agent-card.json"))
	if err != nil {
		return nil, 0, err
	}
	hc := &http.Client{Transport: bearerTransport{token}}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		return nil, 0, err
	}
	defer client.Destroy()
	task, err := a2aAsk(ctx, client, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(infos[0].Input)))
	for asked := 0; err == nil && task.Status.State == a2a.TaskStateInputRequired && asked < 10; asked++ {
		agent := a2aAgent(task)
		answer, ok := p.c.Answers[agent]
		if !ok {
			return nil, 0, fmt.Errorf("task %s asks %q, which the case does not answer", task.ID, agent)
		}
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(answer))
		m.TaskID, m.ContextID = task.ID, task.ContextID
		task, err = a2aAsk(ctx, client, m)
	}
	if err != nil {
		return nil, 0, err
	}
	id := string(task.ID)
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
	return got, code, a2aAgrees(task, code, got)
}

// a2aAsk sends m and returns the task it answers with.
func a2aAsk(ctx context.Context, c *a2aclient.Client, m *a2a.Message) (*a2a.Task, error) {
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		return nil, err
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		return nil, fmt.Errorf("the reply is no task: %T", res)
	}
	return task, nil
}

// a2aAgent is the agent whose question a task that waits shows.
func a2aAgent(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	for _, part := range task.Status.Message.Parts {
		if q, ok := part.Data().(map[string]any); ok {
			a, _ := q["agent"].(string)
			return a
		}
	}
	return ""
}

// a2aAgrees checks the task against the run: completed with the run's
// output as its artifact for a run that succeeded, failed otherwise.
func a2aAgrees(task *a2a.Task, code int, result []byte) error {
	switch {
	case code != 0 && task.Status.State != a2a.TaskStateFailed:
		return fmt.Errorf("run %s ended with exit code %d, and its task is %s", task.ID, code, task.Status.State)
	case code == 0 && task.Status.State != a2a.TaskStateCompleted:
		return fmt.Errorf("run %s succeeded, and its task is %s", task.ID, task.Status.State)
	case code != 0:
		return nil
	}
	var r struct {
		Output json.RawMessage `json:"output"`
	}
	json.Unmarshal(result, &r)
	if len(r.Output) == 0 {
		return nil
	}
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
		return fmt.Errorf("task %s's artifacts: %+v", task.ID, task.Artifacts)
	}
	part := task.Artifacts[0].Parts[0]
	text, ok := part.Content.(a2a.Text)
	if !ok {
		b, _ := json.Marshal(part.Data())
		text = a2a.Text(b)
	}
	if !sameText(string(text), r.Output) {
		return fmt.Errorf("the task's artifact %s is not the run's output %s", text, r.Output)
	}
	return nil
}
