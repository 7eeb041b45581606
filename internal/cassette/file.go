package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ensemble-run/ensemble/internal/readcap"
)

// Version is the version of the file format.
const Version = 1

// Request is one model request in provider-neutral form: what its hash is
// computed from (docs/recording.md#what-a-request-is-matched-by).
type Request struct {
	Provider    string   `yaml:"provider" json:"provider"`
	Model       string   `yaml:"model" json:"model"`
	MaxTokens   int      `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// Options are the profile's options (JSON values), as sent.
	Options  map[string]any `yaml:"options,omitempty" json:"options,omitempty"`
	System   string         `yaml:"system,omitempty" json:"system,omitempty"`
	Tools    []Tool         `yaml:"tools,omitempty" json:"tools,omitempty"`
	Output   *Output        `yaml:"output,omitempty" json:"output,omitempty"`
	Messages []Message      `yaml:"messages" json:"messages"`
}

// Message is one message of a request.
type Message struct {
	Role      string     `yaml:"role" json:"role"`
	Content   string     `yaml:"content,omitempty" json:"content,omitempty"`
	ToolCalls []ToolCall `yaml:"tool_calls,omitempty" json:"tool_calls,omitempty"`
	// ToolCallID is kept in the file but not hashed: IDs are the server's.
	ToolCallID string `yaml:"tool_call_id,omitempty" json:"-"`
	ToolName   string `yaml:"tool_name,omitempty" json:"tool_name,omitempty"`
	IsError    bool   `yaml:"is_error,omitempty" json:"is_error,omitempty"`
}

// ToolCall is one tool call of an assistant message or of a response.
type ToolCall struct {
	ID        string `yaml:"id,omitempty" json:"-"`
	Name      string `yaml:"name" json:"name"`
	Arguments string `yaml:"arguments" json:"arguments"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string         `yaml:"name" json:"name"`
	Description string         `yaml:"description,omitempty" json:"description,omitempty"`
	Schema      map[string]any `yaml:"schema,omitempty" json:"schema,omitempty"`
}

// Output is the structured output asked for.
type Output struct {
	Name   string `yaml:"name" json:"name"`
	Schema any    `yaml:"schema" json:"schema"`
	Strict bool   `yaml:"strict,omitempty" json:"strict,omitempty"`
}

// Response is the model's reply, or the error the request ended with.
type Response struct {
	Text         string     `yaml:"text,omitempty"`
	ToolCalls    []ToolCall `yaml:"tool_calls,omitempty"`
	StopReason   string     `yaml:"stop_reason,omitempty"`
	Refusal      string     `yaml:"refusal,omitempty"`
	InputTokens  int        `yaml:"input_tokens,omitempty"`
	OutputTokens int        `yaml:"output_tokens,omitempty"`
	Error        *Error     `yaml:"error,omitempty"`
}

// Size is the number of bytes of text the response carries: its text,
// refusal, tool calls (names and arguments) and error message. A replay
// holds it to the cap of a live reply, which the recording file (up to
// 1 GiB) would otherwise pass on whole.
func (r *Response) Size() int64 {
	n := int64(len(r.Text) + len(r.Refusal))
	for _, c := range r.ToolCalls {
		n += int64(len(c.Name) + len(c.Arguments))
	}
	if r.Error != nil {
		n += int64(len(r.Error.Message))
	}
	return n
}

// Error is a request that failed with an answer from the server (an HTTP
// error) or without one.
type Error struct {
	Message     string `yaml:"message"`
	Status      int    `yaml:"status,omitempty"`
	Unreachable bool   `yaml:"unreachable,omitempty"`
}

// Exchange is one recorded model request and its response.
type Exchange struct {
	Request  Request  `yaml:"request"`
	Response Response `yaml:"response"`
}

// ToolResult is one recorded tool call and its result.
type ToolResult struct {
	Tool      string `yaml:"tool"`
	Arguments string `yaml:"arguments"`
	Result    string `yaml:"result"`
	IsError   bool   `yaml:"is_error,omitempty"`
}

// Answer is one recorded human answer.
type Answer struct {
	Question string `yaml:"question"`
	Answer   string `yaml:"answer"`
}

func (x *Exchange) redact(redact func(string) string) {
	if redact == nil {
		return
	}
	q := &x.Request
	q.System = redact(q.System)
	q.Options = RedactValue(q.Options, redact).(map[string]any)
	msgs := make([]Message, len(q.Messages))
	for i, m := range q.Messages {
		m.Content = redact(m.Content)
		m.ToolCalls = redactCalls(m.ToolCalls, redact)
		msgs[i] = m
	}
	q.Messages = msgs
	r := &x.Response
	r.Text, r.Refusal = redact(r.Text), redact(r.Refusal)
	r.ToolCalls = redactCalls(r.ToolCalls, redact)
	if r.Error != nil {
		e := *r.Error
		e.Message = redact(e.Message)
		r.Error = &e
	}
}

// RedactValue is a copy of the JSON value v with redact applied to every
// string in it (map keys are left as they are); v itself is not changed.
func RedactValue(v any, redact func(string) string) any {
	switch v := v.(type) {
	case string:
		return redact(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = RedactValue(e, redact)
		}
		return out
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = RedactValue(e, redact)
		}
		return out
	}
	return v
}

func redactCalls(calls []ToolCall, redact func(string) string) []ToolCall {
	if len(calls) == 0 {
		return calls
	}
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		c.Arguments = redact(c.Arguments)
		out[i] = c
	}
	return out
}

// file is one agent's recording.
type file struct {
	path      string
	Version   int          `yaml:"version"`
	Agent     string       `yaml:"agent"`
	Exchanges []Exchange   `yaml:"exchanges,omitempty"`
	Tools     []ToolResult `yaml:"tool_results,omitempty"`
	Answers   []Answer     `yaml:"answers,omitempty"`

	hashes    []string         // of Exchanges
	byHash    map[string][]int // exchange indexes by request hash
	used      map[string]int   // how many of a hash's exchanges were served
	toolsUsed map[string]int
	ansUsed   map[string]int
	served    int // requests asked of the file so far

	// What this process wrote: after the first write (the file whole),
	// entries are appended (add). size is the file's length, the end
	// comment included, and last the section the file ends in.
	written bool
	size    int64
	last    string
}

// sections is what a document of a file after its first holds: one or more
// sections, each continuing the first document's. An appended entry is one.
type sections struct {
	Exchanges []Exchange   `yaml:"exchanges,omitempty"`
	Tools     []ToolResult `yaml:"tool_results,omitempty"`
	Answers   []Answer     `yaml:"answers,omitempty"`
}

// The sections of a file, as their keys.
const (
	kindExchanges = "exchanges"
	kindTools     = "tool_results"
	kindAnswers   = "answers"
)

// header starts every file. Its last line marks a file written by
// appending, whose whole last entry is followed by endLine: one that is
// not was cut short (a run killed while writing it) and is dropped.
const (
	header = "# An ensemble recording: the model exchanges, tool results and human answers of one agent.\n" +
		"# Requests are matched by a hash of their content; edit with care, or record again.\n" +
		appendedLine
	appendedLine = "# Entries are appended as they happen; the file ends with the line \"# end\" when its last one is whole.\n"
	endLine      = "# end\n"
)

// maxFile is the largest recording file of one agent that is read.
const maxFile = 1 << 30

func (f *file) load() error {
	// Only a regular file: opening a FIFO would wait for a writer, for
	// ever, and a device has no end.
	if fi, err := os.Stat(f.path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("recording: %s is not a regular file", f.path)
	}
	b, err := readcap.ReadFile(f.path, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	return f.parse(b)
}

// parse reads the recording b of the file.
func (f *file) parse(b []byte) error {
	// (An editor that drops the last newline, or adds blank lines, leaves
	// the end line.)
	if bytes.Contains(b[:min(len(b), 512)], []byte(appendedLine)) && !bytes.HasSuffix(bytes.TrimRight(b, " \t\r\n"), []byte("\n# end")) {
		b = cutTorn(b)
	}
	var in file
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&in); errors.Is(err, io.EOF) {
		return nil // an empty file
	} else if err != nil {
		return fmt.Errorf("recording: %s: %w", f.path, err)
	}
	if in.Version != Version {
		return fmt.Errorf("recording: %s: version %d, want %d", f.path, in.Version, Version)
	}
	// Appended documents continue the sections.
	for {
		var p sections
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("recording: %s: %w", f.path, err)
		}
		in.Exchanges = append(in.Exchanges, p.Exchanges...)
		in.Tools = append(in.Tools, p.Tools...)
		in.Answers = append(in.Answers, p.Answers...)
	}
	f.Exchanges, f.Tools, f.Answers = in.Exchanges, in.Tools, in.Answers
	return nil
}

// cutTorn is b without its last entry, which a killed run left
// incomplete: b up to the line where that append began. The append wrote
// over the end line from its start, with an entry ("  - …", at the
// section's indentation) or a new document ("---"); only such a line, or
// the end line partly overwritten by one, starts with "-", or with two
// spaces and no third: the lines of whole entries are indented deeper.
func cutTorn(b []byte) []byte {
	for i := len(b) - 1; i > 0; i-- {
		if b[i-1] != '\n' {
			continue
		}
		rest := b[i:]
		if rest[0] == '-' || len(rest) > 2 && rest[0] == ' ' && rest[1] == ' ' && rest[2] != ' ' {
			return b[:i]
		}
	}
	return b
}

func (f *file) index() {
	f.byHash, f.used = map[string][]int{}, map[string]int{}
	f.toolsUsed, f.ansUsed = map[string]int{}, map[string]int{}
	f.hashes = f.hashes[:0]
	for i := range f.Exchanges {
		f.addHash(i)
	}
}

func (f *file) addHash(i int) {
	h := hashOf(&f.Exchanges[i].Request)
	f.hashes = append(f.hashes, h)
	f.byHash[h] = append(f.byHash[h], i)
}

// take is the next exchange recorded for hash h, or nil.
func (f *file) take(h string) *Exchange {
	idx := f.byHash[h]
	if len(idx) == 0 {
		return nil
	}
	n := f.used[h]
	f.used[h] = n + 1
	return &f.Exchanges[idx[min(n, len(idx)-1)]]
}

func (f *file) takeTool(tool, args string) *ToolResult {
	key := tool + "\x00" + args
	var match []int
	for i := range f.Tools {
		if f.Tools[i].Tool == tool && canonicalJSON(f.Tools[i].Arguments) == args {
			match = append(match, i)
		}
	}
	if len(match) == 0 {
		return nil
	}
	n := f.toolsUsed[key]
	f.toolsUsed[key] = n + 1
	return &f.Tools[match[min(n, len(match)-1)]]
}

func (f *file) takeAnswer(question string) *Answer {
	question = normalText(question)
	var match []int
	for i := range f.Answers {
		if normalText(f.Answers[i].Question) == question {
			match = append(match, i)
		}
	}
	if len(match) == 0 {
		return nil
	}
	n := f.ansUsed[question]
	f.ansUsed[question] = n + 1
	return &f.Answers[match[min(n, len(match)-1)]]
}

// save writes the file whole, through a temporary file and a rename, so
// that a run killed mid-write leaves the previous version.
func (f *file) save() error {
	f.Version = Version
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	buf.WriteString(endLine)
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".ensemble-recording-*")
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("recording: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("recording: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("recording: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("recording: %w", err)
	}
	f.written, f.size = true, int64(buf.Len())
	switch {
	case len(f.Answers) > 0:
		f.last = kindAnswers
	case len(f.Tools) > 0:
		f.last = kindTools
	case len(f.Exchanges) > 0:
		f.last = kindExchanges
	default:
		f.last = ""
	}
	return nil
}

// add writes p, one new entry of section kind, already added to f: the
// file whole on the first write of the run, appended after that, so that
// writing an entry costs its size, not the file's. The append replaces
// the end line and writes it again after the entry; a run killed in the
// middle leaves no end line, and the next load drops the cut entry. An
// entry of the section the file ends in continues it; one of another
// section starts a new YAML document with that section.
func (f *file) add(kind string, p sections) error {
	if !f.written {
		return f.save()
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&p); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	entry := buf.Bytes()
	if kind == f.last {
		entry = entry[bytes.IndexByte(entry, '\n')+1:] // the section's key
	} else {
		entry = append([]byte("---\n"), entry...)
	}
	entry = append(entry, endLine...)
	out, err := os.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	at := f.size - int64(len(endLine))
	_, err = out.WriteAt(entry, at)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	f.size, f.last = at+int64(len(entry)), kind
	return nil
}

// hashOf is the hash of the normalised request: its JSON with object keys
// sorted, tool call IDs left out, tool call arguments as compact JSON with
// sorted keys (when they are JSON) and line endings as \n.
func hashOf(r *Request) string {
	n := *r
	n.System = normalText(n.System)
	n.Messages = make([]Message, len(r.Messages))
	for i, m := range r.Messages {
		m.Content = normalText(m.Content)
		if len(m.ToolCalls) > 0 {
			calls := make([]ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.Arguments = canonicalJSON(c.Arguments)
				calls[j] = c
			}
			m.ToolCalls = calls
		}
		n.Messages[i] = m
	}
	b, err := json.Marshal(&n)
	if err != nil {
		// A schema JSON cannot carry: hash what can be printed.
		b = fmt.Appendf(nil, "%#v", n)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// normalText has \n line endings.
func normalText(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// canonicalJSON is s as compact JSON with sorted keys when it is JSON, s
// trimmed otherwise ("" is {}: servers send either for no arguments).
func canonicalJSON(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "{}"
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}
