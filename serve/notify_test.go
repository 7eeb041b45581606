package serve_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
)

// An ask agent with notify: gets its question posted, signed, with a
// one-time answer link that answers the run without the server's token.
func TestNotifyAnswerLink(t *testing.T) {
	t.Parallel()
	type post struct {
		body []byte
		sig  string
	}
	got := make(chan post, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- post{b, r.Header.Get(serve.SignatureHeader)}
	}))
	defer recv.Close()
	dir := t.TempDir()
	step, err := os.ReadFile("testdata/count/step.py")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "step.py"), step, 0o755)
	os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(`name: asker
input: draft
agents:
  - name: writer
    script: step.py
  - name: approver
    ask: "Publish it?"
    ask_mode: suspend
    dependencies: [writer]
    notify: {webhook: "`+recv.URL+`/hook", secret_env: NOTE_SECRET}
  - name: publisher
    script: step.py
    dependencies: [approver]
`), 0o644)
	s := startServer(t, dir, func(o *serve.Options) { o.LookupEnv = lookup(map[string]string{"NOTE_SECRET": "note-secret"}) })
	run := s.start(t, "asker", map[string]any{})
	if run.Status != "awaiting_input" {
		t.Fatalf("status %q", run.Status)
	}
	var p post
	select {
	case p = <-got:
	case <-time.After(patience):
		t.Fatal("no notification")
	}
	if want := serve.Sign([]byte("note-secret"), p.body); p.sig != want {
		t.Errorf("signature %q, want %q", p.sig, want)
	}
	var n serve.Notification
	if err := json.Unmarshal(p.body, &n); err != nil {
		t.Fatal(err)
	}
	if n.RunID != run.RunID || n.Agent != "approver" || n.Question != "Publish it?" || n.Dependencies["writer"] == nil || !strings.HasPrefix(n.AnswerURL, s.url+"/answer/") {
		t.Fatalf("notification %s", p.body)
	}
	path := strings.TrimPrefix(n.AnswerURL, s.url)
	noToken := []string{"Authorization", ""}
	if code, b, _ := s.do(t, "GET", path, nil, noToken...); code != http.StatusOK || !strings.Contains(string(b), "Publish it?") {
		t.Errorf("GET the link: %d %s", code, b)
	}
	wrong := path[:len(path)-1] + map[bool]string{true: "0", false: "1"}[!strings.HasSuffix(path, "0")]
	if code, b, _ := s.do(t, "POST", wrong, `{"answer":"yes"}`, noToken...); code != http.StatusNotFound {
		t.Errorf("another token: %d %s", code, b)
	}
	if code, b, _ := s.do(t, "POST", path, `{"answer":"yes"}`, append(noToken, "Content-Type", "application/json")...); code != http.StatusAccepted {
		t.Fatalf("POST the link: %d %s", code, b)
	}
	s.waitStatus(t, run.RunID, "completed")
	if code, b, _ := s.do(t, "POST", path, `{"answer":"no"}`, noToken...); code != http.StatusNotFound {
		t.Errorf("the link used again: %d %s", code, b)
	}
	if code, _, _ := s.do(t, "GET", path, nil, noToken...); code != http.StatusNotFound {
		t.Errorf("GET a spent link: %d", code)
	}
	// The first answer wins: one given through the API spends the link.
	run = s.start(t, "asker", map[string]any{})
	select {
	case p = <-got:
	case <-time.After(patience):
		t.Fatal("no second notification")
	}
	json.Unmarshal(p.body, &n)
	if n.RunID != run.RunID {
		t.Fatalf("notification %s", p.body)
	}
	if code, b, _ := s.do(t, "POST", "/v1/runs/"+run.RunID+"/answers", map[string]string{"approver": "yes"}); code != http.StatusAccepted {
		t.Fatalf("answer: %d %s", code, b)
	}
	s.waitStatus(t, run.RunID, "completed")
	path = strings.TrimPrefix(n.AnswerURL, s.url)
	if code, b, _ := s.do(t, "GET", path, nil, noToken...); code != http.StatusConflict {
		t.Errorf("GET the link after an answer through the API: %d %s", code, b)
	}
	if code, b, _ := s.do(t, "POST", path, `{"answer":"no"}`, noToken...); code != http.StatusConflict {
		t.Errorf("the link after an answer through the API: %d %s", code, b)
	}
	if code, _, _ := s.do(t, "POST", path, `{"answer":"no"}`, noToken...); code != http.StatusNotFound {
		t.Errorf("the link used again: %d", code)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "count.log"))
	if !strings.Contains(string(log), "draft publisher") {
		t.Errorf("the run did not go on after the answer:\n%s", log)
	}
}

// notify: {slack_env: VAR} posts a Slack message (unsigned: the URL is
// the secret) whose link shows a form; the form's answer goes on with
// the run.
func TestNotifySlack(t *testing.T) {
	t.Parallel()
	type post struct {
		body []byte
		sig  string
	}
	got := make(chan post, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- post{b, r.Header.Get(serve.SignatureHeader)}
	}))
	defer recv.Close()
	dir := t.TempDir()
	step, _ := os.ReadFile("testdata/count/step.py")
	os.WriteFile(filepath.Join(dir, "step.py"), step, 0o755)
	os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(`name: asker
input: draft
agents:
  - name: writer
    script: step.py
  - name: approver
    ask: "Publish <it> & more?"
    ask_mode: suspend
    dependencies: [writer]
    notify: {slack_env: SLACK_URL}
  - name: publisher
    script: step.py
    dependencies: [approver]
`), 0o644)
	s := startServer(t, dir, func(o *serve.Options) {
		o.LookupEnv = lookup(map[string]string{"SLACK_URL": recv.URL + "/services/T0/B0/x"})
	})
	run := s.start(t, "asker", map[string]any{})
	var p post
	select {
	case p = <-got:
	case <-time.After(patience):
		t.Fatal("no Slack message")
	}
	var msg struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(p.body, &msg); err != nil || p.sig != "" {
		t.Fatalf("message %s (signature %q): %v", p.body, p.sig, err)
	}
	if !strings.Contains(msg.Text, "Publish &lt;it&gt; &amp; more?") || !strings.Contains(msg.Text, run.RunID) {
		t.Errorf("text %q", msg.Text)
	}
	i := strings.Index(msg.Text, "<"+s.url+"/answer/")
	if i < 0 {
		t.Fatalf("no answer link in %q", msg.Text)
	}
	link := msg.Text[i+1:]
	link = link[:strings.Index(link, "|")]
	path := strings.TrimPrefix(link, s.url)
	if code, b, _ := s.do(t, "POST", path, "answer=yes", "Authorization", "", "Content-Type", "application/x-www-form-urlencoded"); code != http.StatusAccepted {
		t.Fatalf("the form's answer: %d %s", code, b)
	}
	s.waitStatus(t, run.RunID, "completed")
}

// A file whose ask agent notifies through a variable that is not set is
// refused at the start, as a webhook trigger's unset secret is: its runs
// would wait for a person nobody told.
func TestNotifyUnsetVariableRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ notify, env, want string }{
		{`{webhook: "http://127.0.0.1:1/hook", secret_env: NOTE_SECRET}`, "", "notify: $NOTE_SECRET is not set"},
		{`{webhook: "http://127.0.0.1:1/hook"}`, "", "notify: $" + serve.WebhookSecretEnv + " is not set"},
		{`{slack_env: SLACK_URL}`, "", "notify: $SLACK_URL is not set: it holds the Slack webhook's URL"},
		{`{slack_env: SLACK_URL}`, "SLACK_URL", ""},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(`name: asker
agents:
  - name: approver
    ask: "Publish it?"
    ask_mode: suspend
    notify: `+tc.notify+`
`), 0o644)
		env := map[string]string{serve.WebhookSecretEnv: ""} // lookup's default set
		if tc.env != "" {
			env[tc.env] = "https://hooks.example/x"
		}
		srv, err := serve.New(serve.Options{Paths: []string{dir}, Listen: "127.0.0.1:0", State: filepath.Join(dir, "serve.db"),
			Token: testToken, LookupEnv: lookup(env)})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.notify, err)
			} else {
				srv.Runs().Close(0)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `agent "approver"`) {
			t.Errorf("%s: error %v, want %q", tc.notify, err, tc.want)
		}
		if err == nil {
			srv.Runs().Close(0)
		}
	}
}
