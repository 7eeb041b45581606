package temporal_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/durable"
)

// served runs the case through `ensemble serve --temporal` (the binary),
// whose runs the workers of the test's queue play: started through the
// run API, answered there when it waits, its result read there.
func (p *temporalParity) served() ([]byte, int, error) {
	c := p.c
	switch {
	case c.Record:
		return nil, 0, errors.New("serve has no --replay: a served ensemble runs live")
	case c.Kill:
		return nil, 0, errors.New("not killed here: the worker front door kills the worker of a run")
	}
	db := filepath.Join(p.dir, "serve.db")
	args := append([]string{"serve", c.Path(), "--listen", "127.0.0.1:0", "--state", db, "--no-ui"}, p.addr(p.queue)...)
	cmd := exec.Command(p.bin, args...)
	cmd.Env = append(append(os.Environ(), p.env...), "ENSEMBLE_PROFILES=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	base, token := "", ""
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if m := regexp.MustCompile(`^ensemble serve: (http://\S+) `).FindStringSubmatch(lines.Text()); m != nil {
			base = m[1]
		}
		if tok, ok := strings.CutPrefix(lines.Text(), "token: "); ok {
			token = tok
			break
		}
	}
	go io.Copy(io.Discard, out)
	if base == "" || token == "" {
		cmd.Wait()
		return nil, cmd.ProcessState.ExitCode(), fmt.Errorf("serve did not start: %s", stderr.String())
	}
	call := func(method, path, body string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode/100 != 2 {
			err = fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
		}
		return resp, b, err
	}
	_, b, err := call("GET", "/v1/ensembles", "")
	if err != nil {
		return nil, 0, err
	}
	var list struct{ Ensembles []struct{ Name string } }
	if err := json.Unmarshal(b, &list); err != nil || len(list.Ensembles) != 1 {
		return nil, 0, fmt.Errorf("GET /v1/ensembles: %v: %s", err, b)
	}
	if _, b, err = call("POST", "/v1/ensembles/"+list.Ensembles[0].Name+"/runs", "{}"); err != nil {
		return nil, 0, err
	}
	var run struct {
		ID string `json:"run_id"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		return nil, 0, err
	}
	answered := false
	for deadline := time.Now().Add(waitFor); ; time.Sleep(50 * time.Millisecond) {
		resp, res, err := call("GET", "/v1/runs/"+run.ID, "")
		if err != nil {
			return nil, 0, err
		}
		status := resp.Header.Get("Ensemble-Run-Status")
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("run %s has not ended: %s\n%s", run.ID, status, stderr.String())
		}
		switch {
		case status == "queued" || status == "running" || status == "interrupted":
			continue
		case status == "awaiting_input" && c.Answers != nil && !answered:
			body, _ := json.Marshal(c.Answers)
			if _, _, err := call("POST", "/v1/runs/"+run.ID+"/answers", string(body)); err != nil {
				return nil, 0, err
			}
			answered = true
			continue
		}
		sf, info, err := durable.Load(db, run.ID)
		if err != nil {
			return nil, 0, err
		}
		return res, durable.Result(sf, info).ExitCode(), nil
	}
}
