package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/serve"
)

// served runs the case through ensemble serve's run API: a POST that waits
// for the run, the answers when it waits for them, and its result as GET
// /v1/runs/{id} gives it (state show's bytes). A Kill case runs in the
// binary, killed with SIGKILL once its script parks and started again on
// the same database, which goes on with the run.
func (p *parityRun) served() ([]byte, int, error) {
	if p.c.Record {
		return nil, 0, errors.New("serve has no --replay: a served ensemble runs live")
	}
	db := filepath.Join(p.dir, "serve.db")
	if p.c.Kill {
		return p.servedKilled(db)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	const token = "parity-serve-token"
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
	id, err := api.start(p.c.Path(), p.env(false))
	if err != nil {
		return nil, 0, err
	}
	return api.finish(p, db, id)
}

// serveClient calls a server's run API.
type serveClient struct{ base, token string }

// call sends a request with headers (name, value pairs; a func(http.Header)
// is given the reply's) and decodes a 2xx reply into out (nil: none); any
// other status is an error with the reply.
func (c *serveClient) call(method, path string, body any, out any, headers ...any) ([]byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	var seen func(http.Header)
	for i := 0; i < len(headers); i++ {
		if f, ok := headers[i].(func(http.Header)); ok {
			seen = f
		} else if i+1 < len(headers) {
			req.Header.Set(headers[i].(string), headers[i+1].(string))
			i++
		}
	}
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if seen != nil {
		seen(resp.Header)
	}
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, data)
	}
	if out != nil {
		return data, json.Unmarshal(data, out)
	}
	return data, nil
}

type serveRun struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
}

// start starts a run of the ensemble of file path (by its name) with its
// own input.
func (c *serveClient) start(path string, env map[string]string) (string, error) {
	var list struct{ Ensembles []serve.EnsembleInfo }
	if _, err := c.call("GET", "/v1/ensembles", nil, &list); err != nil {
		return "", err
	}
	if len(list.Ensembles) != 1 {
		return "", fmt.Errorf("%s: %d ensembles served", path, len(list.Ensembles))
	}
	var r serveRun
	_, err := c.call("POST", "/v1/ensembles/"+list.Ensembles[0].Name+"/runs", map[string]any{}, &r, "Prefer", "wait=0")
	return r.RunID, err
}

// finish waits for run id, answers it when it waits for the case's
// answers, and returns its result and exit code.
func (c *serveClient) finish(p *parityRun, db, id string) ([]byte, int, error) {
	answered := false
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var status string
		res, err := c.call("GET", "/v1/runs/"+id, nil, nil, func(h http.Header) { status = h.Get("Ensemble-Run-Status") })
		if err != nil {
			return nil, 0, err
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("run %s has not ended: %s", id, status)
		}
		switch {
		case status == serve.StatusQueued || status == serve.StatusRunning || status == serve.StatusInterrupted:
			continue
		case status == "awaiting_input" && p.c.Answers != nil && !answered:
			answers := map[string]json.RawMessage{}
			for k, v := range p.c.Answers {
				answers[k] = json.RawMessage(strconv.Quote(v))
			}
			if _, err := c.call("POST", "/v1/runs/"+id+"/answers", answers, nil); err != nil {
				return nil, 0, err
			}
			answered = true
			continue
		}
		sf, info, err := durable.Load(db, id)
		if err != nil {
			return nil, 0, err
		}
		return res, durable.Result(sf, info).ExitCode(), nil
	}
}

// servedKilled runs a Kill case in `ensemble serve` (the binary), kills it
// with SIGKILL once the case's script parks, starts it again on the same
// database and waits for the run there.
func (p *parityRun) servedKilled(db string) ([]byte, int, error) {
	t := p.t
	p.kills++
	marker := filepath.Join(p.dir, "parked-serve"+strconv.Itoa(p.kills))
	start := func() (*exec.Cmd, *serveClient, error) {
		env := []string{"ENSEMBLE_PROFILES=", "PARITY_BLOCK=" + marker}
		for k, v := range p.env(false) {
			env = append(env, k+"="+v)
		}
		return startServeBinary(cliCommand(t, env, "serve", p.c.Path(), "--listen", "127.0.0.1:0", "--state", db, "--no-ui"))
	}
	cmd, c, err := start()
	if err != nil {
		return nil, 0, err
	}
	id, err := c.start(p.c.Path(), nil)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, 0, err
	}
	var pid []byte
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if pid, err = os.ReadFile(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, 0, errors.New("the script never parked")
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if n, err := strconv.Atoi(string(pid)); err == nil {
		syscall.Kill(n, syscall.SIGKILL)
	}
	cmd, c, err = start() // goes on with the run
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	return c.finish(p, db, id)
}

// startServeBinary starts cmd, an `ensemble serve` of the binary, and
// reads its URL and token from what it prints: a client of it, and the
// process. A server that does not start is killed, its stderr in the error.
func startServeBinary(cmd *exec.Cmd) (*exec.Cmd, *serveClient, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	c := &serveClient{}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if m := serveURLLine.FindStringSubmatch(lines.Text()); m != nil {
			c.base = m[1]
		}
		if tok, ok := strings.CutPrefix(lines.Text(), "token: "); ok {
			c.token = tok
			break
		}
	}
	go io.Copy(io.Discard, out)
	if c.base == "" || c.token == "" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, nil, fmt.Errorf("serve did not start: %s", stderr.String())
	}
	return cmd, c, nil
}

// serveURLLine is the line serve prints its URL on.
var serveURLLine = regexp.MustCompile(`^ensemble serve: (http://\S+) `)
