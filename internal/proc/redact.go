package proc

// newTail is the stderr tail of spec: StderrTail bytes, and spec.Hold
// more when it redacts.
func newTail(spec Spec) *tailBuffer {
	if spec.Redact == nil {
		return &tailBuffer{max: StderrTail}
	}
	return &tailBuffer{max: StderrTail + max(spec.Hold, 0), keep: StderrTail, redact: spec.Redact}
}

// redacted is the tail's bytes with their secrets redacted, then cut to
// t.keep bytes. When earlier output was dropped, the first Hold bytes kept
// (t.max - t.keep) may begin with the end of a secret whose start was
// dropped: the redactor cannot know it, so they are never shown, however
// much shorter the redaction made the rest.
func (t *tailBuffer) redacted() ([]byte, bool) {
	red := t.redact(string(t.buf))
	start := max(len(red)-t.keep, 0)
	if t.truncated {
		start = max(start, len(t.buf)-t.keep)
	}
	return []byte(red[min(start, len(red)):]), t.truncated || start > 0
}
