package serve

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/readcap"
	"github.com/ensemble-run/ensemble/kinds/ask"
)

// Notifications for ask agents (docs/serve.md#notifications): when a run
// waits for an ask agent with notify:, the server posts the question to
// its webhook, signed, with a one-time answer link on this server
// (/answer/TOKEN). The link is its own authentication, as a trigger's
// signature is: it is random (256 bits), kept only as its hash in the
// journal (STATE.serve/answers/), and spent by the first answer given
// through it.

// Notification is the body of a notification post.
type Notification struct {
	RunID    string `json:"run_id"`
	Ensemble string `json:"ensemble"`
	Agent    string `json:"agent"`
	Question string `json:"question"`
	// Dependencies are what the agent is given, as the person should read
	// them.
	Dependencies map[string]any `json:"dependencies"`
	// AnswerSchema is the JSON Schema the answer must meet: null, any
	// text or JSON (ask agents declare none).
	AnswerSchema map[string]any `json:"answer_schema"`
	// AnswerURL answers the agent once: POST {"answer": VALUE} (or a form
	// field answer); GET shows a form.
	AnswerURL string `json:"answer_url"`
	Turn      int    `json:"turn"`
	// Deadline is when the question stops waiting (the agent's timeout:;
	// then its on_timeout applies); absent when it waits as long as it
	// takes.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// answerLink is what an answer link answers, kept under its hash.
type answerLink struct {
	Run   string `json:"run"`
	Agent string `json:"agent"`
	Turn  int    `json:"turn"`
}

const answerPrefix = "/answer/"

var answerTokenPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (rs *Runs) linkPath(token string) string {
	sum := sha256.Sum256([]byte(token))
	return filepath.Join(rs.j.dir, "answers", hex.EncodeToString(sum[:]))
}

// notify posts, for each question run id waits for whose ask agent has
// notify:, the question and a new answer link to its webhook.
func (rs *Runs) notify(id string) {
	info, err := rs.info(id)
	if err != nil {
		return
	}
	rs.rd.Hold()
	sf, err := rs.rd.Load(info)
	rs.rd.Release()
	if err != nil || sf.CompletionReason != engine.AwaitingInput {
		return
	}
	e := rs.ensembleOf(sf)
	if e == nil {
		return
	}
	res := rs.resultOf(sf, info)
	for _, p := range res.PendingInput {
		a := e.Agent(p.Agent)
		if a == nil {
			continue
		}
		n := ask.SpecOf(a).Notify
		if n == nil {
			continue
		}
		env := n.SecretEnv
		if env == "" {
			env = WebhookSecretEnv
		}
		out := &outgoing{Run: id, URL: n.Webhook, SecretEnv: env}
		if n.SlackEnv != "" {
			out.URL, out.URLEnv, out.SecretEnv = "", n.SlackEnv, ""
		}
		if _, _, _, err := rs.resolve(out); err != nil { // outbox.go
			rs.logf("run %s: agent %q: no notification: %s", id, p.Agent, err)
			continue
		}
		var b [32]byte
		rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		// the turn the run stands at: an answer after it went on is refused
		link, _ := json.Marshal(answerLink{Run: id, Agent: p.Agent, Turn: sf.State.TurnCount})
		if err := os.MkdirAll(filepath.Dir(rs.linkPath(token)), 0o700); err != nil {
			rs.logf("run %s: agent %q: no notification: %s", id, p.Agent, err)
			continue
		}
		if err := os.WriteFile(rs.linkPath(token), link, 0o600); err != nil {
			rs.logf("run %s: agent %q: no notification: %s", id, p.Agent, err)
			continue
		}
		answerURL := strings.TrimSuffix(rs.o.PublicURL, "/") + answerPrefix + token
		body, _ := json.Marshal(Notification{RunID: id, Ensemble: e.Name, Agent: p.Agent, Question: p.Question,
			Dependencies: p.Dependencies, AnswerURL: answerURL, Turn: p.Turn, Deadline: p.Deadline})
		if n.SlackEnv != "" {
			body, _ = json.Marshal(map[string]string{"text": slackText(id, e.Name, p.Agent, p.Question, answerURL, p.Deadline)})
		}
		out.Body = rs.redactBytes(body)
		rs.wg.Add(1)
		go func() {
			defer rs.wg.Done()
			rs.send(out)
		}()
	}
}

// spendLink takes the answer link of token: it answers once. put gives
// it back (an answer that failed for a reason of the server's).
func (rs *Runs) spendLink(token string) (link *answerLink, put func(), err error) {
	p := rs.linkPath(token)
	spent := p + ".spent"
	if err := os.Rename(p, spent); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, errorf(CodeNotFound, "this answer link is unknown or was used already")
		}
		return nil, nil, err
	}
	b, err := readcap.ReadFile(spent, 4<<10)
	if err == nil {
		link = &answerLink{}
		err = json.Unmarshal(b, link)
	}
	if err != nil {
		os.Remove(spent)
		return nil, nil, err
	}
	return link, func() { os.Rename(spent, p) }, nil
}

// peekLink reads the answer link of token without spending it; nil when
// there is none.
func (rs *Runs) peekLink(token string) *answerLink {
	b, err := readcap.ReadFile(rs.linkPath(token), 4<<10)
	if err != nil {
		return nil
	}
	var l answerLink
	if json.Unmarshal(b, &l) != nil {
		return nil
	}
	return &l
}

var answerPage = template.Must(template.New("answer").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>{{.Agent}}: an answer</title></head>
<body style="font-family:sans-serif;max-width:40em;margin:2em auto">
<p>Run <code>{{.Run}}</code> waits for <b>{{.Agent}}</b>:</p>
<p style="white-space:pre-wrap;font-size:1.2em">{{.Question}}</p>
<form method="post"><textarea name="answer" rows="4" style="width:100%" required></textarea>
<p><button type="submit">Answer</button> (the link answers once)</p></form>
</body></html>
`))

var answeredPage = template.Must(template.New("answered").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Answered</title></head>
<body style="font-family:sans-serif;max-width:40em;margin:2em auto">
<p>{{.Agent}} is answered: run <code>{{.Run}}</code> goes on. This link answers no more.</p>
</body></html>
`))

// serveAnswer answers GET /answer/TOKEN with a form (it spends nothing: a
// chat's link preview fetches it) and POST with the answer: {"answer":
// VALUE} (a string the answer's text, any other JSON value the output
// itself) or the form's field answer.
func (s *Server) serveAnswer(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.URL.Path, answerPrefix)
	if !answerTokenPattern.MatchString(token) {
		writeError(w, http.StatusNotFound, CodeNotFound, "this answer link is unknown or was used already")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	switch r.Method {
	case http.MethodGet:
		l := s.runs.peekLink(token)
		if l == nil {
			writeError(w, http.StatusNotFound, CodeNotFound, "this answer link is unknown or was used already")
			return
		}
		question, waits := "", false
		if res, _, err := s.runs.RunResult(l.Run); err == nil && res.TurnCount == l.Turn {
			for _, p := range res.PendingInput {
				if p.Agent == l.Agent {
					question, waits = p.Question, true
				}
			}
		}
		if !waits {
			writeError(w, http.StatusConflict, CodeConflict, "run "+l.Run+" no longer waits for "+l.Agent+": it was answered another way, or went on")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
		answerPage.Execute(w, map[string]any{"Run": l.Run, "Agent": l.Agent, "Question": s.runs.redact(question)})
	case http.MethodPost:
		text, err := answerOf(r)
		if err != nil {
			s.fail(w, err)
			return
		}
		l, put, err := s.runs.spendLink(token)
		if err != nil {
			s.fail(w, err)
			return
		}
		if err := s.runs.answerAt(l.Run, map[string]string{l.Agent: text}, l.Turn); err != nil {
			var e *Error
			if errors.As(err, &e) && e.Code == CodeConflict {
				// answered another way, or gone on: the link is spent
				s.fail(w, err)
				return
			}
			put()
			s.fail(w, err)
			return
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
			// the page's form: a page again
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", "default-src 'none'")
			w.WriteHeader(http.StatusAccepted)
			answeredPage.Execute(w, map[string]any{"Run": l.Run, "Agent": l.Agent})
			return
		}
		s.reply(w, http.StatusAccepted, map[string]string{"run_id": l.Run, "agent": l.Agent, "status": "answered"})
	default:
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, CodeBadRequest, "GET shows the question, POST answers it")
	}
}

// answerOf is the answer a POST carries, as the run API's answers take it.
func answerOf(r *http.Request) (string, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/x-www-form-urlencoded" {
		if err := r.ParseForm(); err != nil {
			return "", errorf(CodeBadRequest, "the form does not parse: %v", err)
		}
		if !r.PostForm.Has("answer") {
			return "", errorf(CodeBadRequest, "no answer: send the field answer")
		}
		return r.PostForm.Get("answer"), nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	var body struct {
		Answer json.RawMessage `json:"answer"`
	}
	if err := json.Unmarshal(b, &body); err != nil || body.Answer == nil {
		return "", errorf(CodeBadRequest, `no answer: post {"answer": VALUE}`)
	}
	var text string
	if json.Unmarshal(body.Answer, &text) != nil {
		text = string(body.Answer)
	}
	return text, nil
}

// slackText is a Slack message of a question: its text escaped as Slack
// wants (&, <, >), the answer link last.
func slackText(run, ensembleName, agentName, question, answerURL string, deadline *time.Time) string {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	until := ""
	if deadline != nil { // the agent's timeout:
		until = "Waits until " + deadline.UTC().Format(time.RFC3339) + ".\n"
	}
	return fmt.Sprintf("Run `%s` of *%s* waits for *%s*:\n>%s\n%s<%s|Answer it> (the link answers once)",
		esc.Replace(run), esc.Replace(ensembleName), esc.Replace(agentName),
		strings.ReplaceAll(esc.Replace(question), "\n", "\n>"), until, answerURL)
}

// checkNotify refuses to serve a file whose ask agents notify through a
// variable that is not set: such a run would wait for a person nobody
// told, for days, with only a line in the server's log to say why. Its
// webhook triggers' secrets are checked the same way (setupTriggers).
func (s *Server) checkNotify(list []*served) error {
	for _, sv := range list {
		for _, a := range sv.e.Agents {
			n := ask.SpecOf(a).Notify
			if n == nil {
				continue
			}
			env, what := n.SecretEnv, "the secret its notifications are signed with"
			switch {
			case n.SlackEnv != "":
				env, what = n.SlackEnv, "the Slack webhook's URL"
			case env == "":
				env = WebhookSecretEnv
			}
			if v, _ := s.o.LookupEnv(env); v == "" {
				return fmt.Errorf("%s: agent %q: notify: $%s is not set: it holds %s", sv.e.Path, a.Name, env, what)
			}
		}
	}
	return nil
}
