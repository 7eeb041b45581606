// Package ask is the ask kind: agents that ask a human a question on the
// terminal.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package ask

import (
	"net/url"
	"regexp"
	"time"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/ensemble"
)

// Kind is the ask kind; Options are its runner's (kinds.Registry.With
// sets them).
type Kind struct{ Options Options }

var _ agent.Kind = Kind{}

// String is "ask".
func (Kind) String() string { return "ask" }

// Key is ask: the question.
func (Kind) Key() string { return "ask" }

// Fields: ask_mode, notify, timeout, on_timeout.
func (Kind) Fields() []string { return []string{"ask_mode", "notify", "timeout", "on_timeout"} }

// Spec is what an ask agent has of its own (Agent.Spec).
type Spec struct {
	Question string // shown to the human
	// Mode is "" (ask at the terminal when there is one, else wait for an
	// answer given to resume) or ModeSuspend (always wait).
	Mode string
	// Notify is where `ensemble serve` posts the question when a run
	// waits for this agent; nil: nowhere.
	Notify *Notify
	// Timeout is how long the question waits for an answer (timeout:, as
	// written in TimeoutText); 0: as long as it takes. OnTimeout is then
	// what it becomes (never nil when Timeout is set: fail by default).
	Timeout     time.Duration
	TimeoutText string
	OnTimeout   *OnTimeout
}

// Notify is an ask agent's notify: a webhook posted the question, what
// the agent is given and a one-time answer link (docs/serve.md).
type Notify struct {
	Webhook string // http:// or https:// URL
	// SecretEnv names the variable whose value signs the posts; ""
	// signs them with the server's $ENSEMBLE_WEBHOOK_SECRET.
	SecretEnv string
	// SlackEnv, instead of Webhook, names the variable holding a Slack
	// incoming webhook's URL (a secret: anyone holding it may post),
	// posted a message with the question and the link.
	SlackEnv string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ModeSuspend is ask_mode: suspend (docs/semantics.md#ask-agents-that-wait).
const ModeSuspend = "suspend"

// SpecOf is a's Spec; an empty one when a has none.
func SpecOf(a *ensemble.Agent) *Spec {
	if s, ok := a.Spec.(*Spec); ok {
		return s
	}
	return &Spec{}
}

// Decode decodes the question, which must not be empty. A person answers
// one question per execution, in typed text: no fan_out, no output_schema.
func (k Kind) Decode(f *ensemble.Fields, a *ensemble.Agent) {
	if a.Kind == k { // not an agent of no clear kind, whose fields every kind checks
		f.Refuse("output_schema", k, "which ask a person")
		f.Refuse("fan_out", k, "which ask a person")
	}
	s := &Spec{}
	if f.Has("ask") {
		s.Question = f.String("ask")
		f.Require("ask", s.Question == "")
	}
	if f.Has("ask_mode") {
		switch m := f.String("ask_mode"); m {
		case "terminal":
		case ModeSuspend:
			s.Mode = m
		default:
			f.Bad("ask_mode", "must be terminal or suspend, not %q", m)
		}
	}
	if m := f.Mapping("notify", "webhook", "secret_env", "slack_env"); m != nil {
		n := &Notify{Webhook: m.String("webhook"), SecretEnv: m.String("secret_env"), SlackEnv: m.String("slack_env")}
		switch {
		case m.Has("slack_env"):
			if m.Has("webhook") {
				m.Bad("slack_env", "and webhook cannot both be given: one notification a question")
			}
			if m.Has("secret_env") {
				m.Bad("secret_env", "signs a webhook's posts; Slack's are not signed")
			}
			if !envName.MatchString(n.SlackEnv) {
				m.Bad("slack_env", "%q is not a variable name: name the variable holding the Slack webhook's URL", n.SlackEnv)
			}
		default:
			m.Require("webhook", n.Webhook == "")
		}
		if u, err := url.Parse(n.Webhook); n.Webhook != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			m.Bad("webhook", "must be an http:// or https:// URL, got %q", n.Webhook)
		}
		if m.Has("secret_env") && !envName.MatchString(n.SecretEnv) {
			m.Bad("secret_env", "%q is not a variable name: name the variable holding the secret", n.SecretEnv)
		}
		s.Notify = n
	}
	decodeTimeout(f, s)
	a.Spec = s
}

// Question is what a asks.
func (Kind) Question(a *ensemble.Agent) string { return SpecOf(a).Question }

// KeepsMemory: a simulated user continues its conversation.
func (Kind) KeepsMemory() bool { return true }

// AsksHuman: the agent waits for a person at the terminal.
func (Kind) AsksHuman() bool { return true }

// Describe: "ask", or "ask (suspend)" for ask_mode: suspend.
func (Kind) Describe(_ *ensemble.Ensemble, a *ensemble.Agent) []string {
	if SpecOf(a).Mode == ModeSuspend {
		return []string{"ask (suspend)"}
	}
	return []string{"ask"}
}

// Shape: a yellow parallelogram.
func (Kind) Shape() agent.Shape {
	return agent.Shape{
		Mermaid:      [2]string{"[/", "/]"},
		MermaidClass: "fill:#fef7e0,stroke:#b08400,color:#1a1a1a",
		DOT:          `shape=parallelogram, fillcolor="#fef7e0", color="#b08400"`,
	}
}

// Runner asks on the terminal of the kind's Options.
func (k Kind) Runner(*agent.Host) agent.Runner {
	o := k.Options
	return &Runner{In: o.In, Out: o.Out, Interactive: o.Interactive, NoInput: o.NoInput, Batch: o.Batch, Suspend: o.Suspend}
}

// SecretVars are the variables a's notify names: the secret its posts are
// signed with and the Slack webhook's URL, kept from scripts and redacted
// as keys are.
func (Kind) SecretVars(a *ensemble.Agent) []string {
	n := SpecOf(a).Notify
	if n == nil {
		return nil
	}
	var vars []string
	for _, v := range []string{n.SecretEnv, n.SlackEnv} {
		if v != "" {
			vars = append(vars, v)
		}
	}
	return vars
}
