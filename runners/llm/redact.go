package llm

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ensemble-run/ensemble/ensemble"
)

// redacted replaces a key's value wherever the runner returns text.
const redacted = "[REDACTED]"

// maxErrorText caps the message of a failed execution (a provider's error
// body can be long); it is cut after the keys are redacted, so no part of a
// key survives the cut.
const maxErrorText = 2000

// secrets are the values of every key an ensemble's model profiles name
// (api_key_env), redacted from everything an execution returns: errors,
// replies, tool-call arguments, tool results and streamed text. A key of
// another profile may reach a reply or an error too (a base_url, a
// confused proxy), so all of them are redacted, not only the one in use.
// The zero value (no keys) changes nothing.
type secrets struct {
	replacer *strings.Replacer
	longest  int // bytes of the longest key
}

// secrets looks up the keys of ens's profiles. Values shorter than 4 bytes
// are not redacted (they would mangle ordinary text and protect nothing).
func (r *Runner) secrets(ens *ensemble.Ensemble) *secrets {
	var keys []string
	for _, p := range ens.Models {
		if p.APIKeyEnv == "" {
			continue
		}
		if v, ok := r.lookupEnv(p.APIKeyEnv); ok {
			if v = strings.TrimSpace(v); len(v) >= 4 && !slices.Contains(keys, v) {
				keys = append(keys, v)
			}
		}
	}
	s := &secrets{}
	if len(keys) == 0 {
		return s
	}
	// Longest first: where one key is the prefix of another, the longer
	// one is replaced whole (the replacer tries the pairs in order).
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, redacted)
	}
	s.replacer = strings.NewReplacer(pairs...)
	s.longest = len(keys[0])
	return s
}

// redact replaces every key in text.
func (s *secrets) redact(text string) string {
	if s.replacer == nil {
		return text
	}
	return s.replacer.Replace(text)
}

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
	if s.replacer == nil {
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
	if s.replacer == nil {
		return onText, func() {}
	}
	var pending string
	emit = func(delta string) {
		pending = s.redact(pending + delta)
		n := len(pending) - (s.longest - 1)
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
