package llm

import (
	"unicode/utf8"

	"github.com/ensemble-run/ensemble/ensemble"
	keyset "github.com/ensemble-run/ensemble/internal/secrets"
)

// redacted replaces a key's value wherever the runner returns text.
const redacted = keyset.Redacted

// maxErrorText caps the message of a failed execution (a provider's error
// body can be long); it is cut after the keys are redacted, so no part of a
// key survives the cut.
const maxErrorText = 2000

// secrets redacts the values of every key an ensemble's model profiles
// name (api_key_env) from everything an execution returns: errors,
// replies, tool-call arguments, tool results and streamed text. A key of
// another profile may reach a reply or an error too (a base_url, a
// confused proxy), so all of them are redacted, not only the one in use.
// The zero value (no keys) changes nothing.
type secrets struct {
	r *keyset.Redactor
}

// secrets looks up the keys of ens's profiles and of the other files of
// its load (a sibling child ensemble's: Ensemble.SecretEnvNames).
func (r *Runner) secrets(ens *ensemble.Ensemble) *secrets {
	return &secrets{keyset.OfEnsemble(ens, r.lookupEnv, r.opts.Secrets...)}
}

// redact replaces every key in text.
func (s *secrets) redact(text string) string { return s.r.String(text) }

// redactError returns err with every key redacted from its message, cut to
// maxErrorText bytes (at a character boundary). The original stays
// reachable through errors.Is/As.
func (s *secrets) redactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	text := cut(s.redact(msg), maxErrorText)
	if text == msg {
		return err
	}
	return &redactedError{msg: text, err: err}
}

// redactedError is an error whose message was redacted.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// cut shortens s to at most n bytes, at a character boundary, marking the
// cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// redactReply redacts the text, the refusal and the tool-call arguments of
// a reply.
func (s *secrets) redactReply(resp *ChatResponse) {
	if s.r.Empty() {
		return
	}
	resp.Text = s.redact(resp.Text)
	resp.Refusal = s.redact(resp.Refusal)
	for i := range resp.ToolCalls {
		resp.ToolCalls[i].Arguments = s.redact(resp.ToolCalls[i].Arguments)
	}
}

// stream wraps onText so that no key reaches it, even one split across
// deltas: it holds back the last longest-1 bytes of the text until more
// arrives (any key starting before them is then whole, and redacted);
// flush sends what is held back once the reply has ended.
func (s *secrets) stream(onText func(string)) (emit func(string), flush func()) {
	if s.r.Empty() {
		return onText, func() {}
	}
	longest := s.r.Longest()
	var pending string
	emit = func(delta string) {
		pending = s.redact(pending + delta)
		n := len(pending) - (longest - 1)
		for n > 0 && !utf8.RuneStart(pending[n]) {
			n--
		}
		if n > 0 {
			onText(pending[:n])
			pending = pending[n:]
		}
	}
	flush = func() {
		if pending != "" {
			onText(s.redact(pending))
			pending = ""
		}
	}
	return emit, flush
}
