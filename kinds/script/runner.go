package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ensemble-run/ensemble/agent"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/proc"
	"github.com/ensemble-run/ensemble/internal/runners"
	"github.com/ensemble-run/ensemble/scriptexec"
)

// Runner runs script agents (docs/semantics.md#script-agents).
//
// The script gets on stdin exactly one JSON object, with the keys in this
// order:
//
//	{"agent", "input", "parameters", "dependencies", "context", "turn",
//	 "execution", "request_parameters"}
//
// parameters, dependencies and context are objects ({} when empty);
// request_parameters is null unless agent requests (docs/semantics.md#agent-requests) made the agent
// ready. Its environment is the parent's (Environ), plus ENSEMBLE_AGENT,
// ENSEMBLE_TURN and ENSEMBLE_EXECUTION, plus the agent's env (which cannot
// override the three ENSEMBLE_* variables), minus every api_key_env variable.
// It runs in the ensemble file's folder, bounded by the agent's
// timeout_seconds (and the run's context).
//
// Its stdout is the output, by parseStdout's rule: exactly one JSON value is
// stored parsed; JSON mixed with log lines, before or after it, or broken
// JSON fails the execution; anything else is a trimmed string, and empty
// stdout the output "". The tail of its stderr is kept in Result.Stderr.
// An object whose "success" is false is a failure whose message is its
// "error" (a string, or the JSON of any other value); an object whose
// "success" is true and that has a "data" key is the output data. An
// object with "success": true and no "data" is an ordinary output. When a
// script exits non-zero after printing a failure envelope, the envelope's
// message comes first, followed by the exit code and stderr tail.
type Runner struct {
	// Environ returns the parent environment; nil means os.Environ.
	Environ func() []string
}

var _ agent.Runner = (*Runner)(nil)

// scriptInput is the stdin object; the field order is the protocol's.
type scriptInput struct {
	Agent                string         `json:"agent"`
	Input                any            `json:"input"` // the run's, or the input template's value
	Parameters           map[string]any `json:"parameters"`
	Dependencies         map[string]any `json:"dependencies"`
	Context              map[string]any `json:"context"`
	Turn                 int            `json:"turn"`
	Execution            int            `json:"execution"`
	RequestParameters    map[string]any `json:"request_parameters"`
	*agent.InstanceInput                // item, index, count: fan-out instances only
}

// Run runs the agent's script once.
func (s *Runner) Run(ctx context.Context, req *agent.Request) *agent.Result {
	a := req.Agent
	spec := SpecOf(a)
	in := scriptInput{
		Agent:             a.Name,
		Input:             scriptexec.Input(req),
		Parameters:        orEmpty(spec.Parameters),
		Dependencies:      orEmpty(req.Dependencies),
		Context:           orEmpty(req.Context),
		Turn:              req.Turn,
		Execution:         req.Execution,
		RequestParameters: req.RequestParameters,
		InstanceInput:     req.Instance.Stdin(),
	}
	res := &agent.Result{InputData: inputData(req)}
	var stdin []byte
	var err error
	env := spec.Env
	if spec.Protocol == ProtocolLLMOrc {
		stdin, env, err = llmOrcInput(req, spec)
	} else {
		stdin, err = json.Marshal(in)
	}
	if err != nil {
		res.Err = fmt.Errorf("cannot encode the script's input as JSON: %w", err)
		return res
	}

	path := spec.Path
	if path == "" {
		path = spec.Script
	}
	if path == "" {
		res.Err = fmt.Errorf("agent %q has no script", a.Name)
		return res
	}
	out, err := scriptexec.ExecScript(ctx, req, s.Environ, env, proc.Spec{Path: path, Stdin: stdin, Timeout: a.Timeout})
	if out != nil {
		res.Stderr = out.Stderr
	}
	if err != nil {
		var xe *scriptexec.ExitError
		if errors.As(err, &xe) && out != nil {
			v, _ := runners.ParseOutput(string(out.Stdout)) // too deep: no envelope to read
			if msg, failed := envelopeFailure(v); failed {
				err = fmt.Errorf("%s (%w)", msg, err)
			}
		}
		res.Err = err
		return res
	}
	parsed, err := parseStdoutRedacted(out.Stdout, req.Services.Secrets.String)
	if err != nil {
		res.Err = err
		return res
	}
	output, err := unwrapEnvelope(parsed)
	if err != nil {
		res.Err = err
		return res
	}
	// docs/format.md#output-schemas: an output that fails the schema fails
	// the execution.
	if err := runners.CheckSchema(a, output); err != nil {
		res.Err = err
		return res
	}
	res.Output = output
	return res
}

// maxJSONStarts bounds how many lines parseStdout tries as the start of a
// JSON value mixed with other text: each try may read the rest of stdout, so
// the bound keeps it linear in the output size.
const maxJSONStarts = 64

// parseStdout turns a script's stdout into its output, by one rule for log
// lines before or after JSON:
//   - stdout that is exactly one JSON value (trimmed of white space) is that
//     value; empty stdout is "";
//   - stdout in which whole lines hold a JSON object or array, with other
//     text before or after them, fails: `stdout mixes JSON with other
//     text (line N); print logs to stderr`, N being the first line of the
//     other text;
//   - stdout that looks like JSON (see looksLikeJSON) but does not parse
//     fails too: a script that meant to print JSON and printed it broken
//     (truncated) must not pass as a string;
//   - anything else ("[INFO] done", "hello") is the trimmed string.
func parseStdout(stdout []byte) (any, error) { return parseStdoutRedacted(stdout, nil) }

// parseStdoutRedacted is parseStdout whose error quotes stdout with redact
// applied before it is cut (nil: none), so that the cut never keeps the
// start of a key.
func parseStdoutRedacted(stdout []byte, redact func(string) string) (any, error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return "", nil
	}
	v, err := runners.DecodeOutput(trimmed)
	if err == nil || errors.Is(err, runners.ErrTooDeep) {
		return v, err
	}
	if re, ok := errors.AsType[*jsonvalue.NumberRangeError](err); ok {
		// Valid JSON, which no float64 holds: placed in the whole stdout.
		at := int64(bytes.Index(stdout, trimmed))
		return nil, fmt.Errorf("stdout is JSON, but %w", re.Within(stdout, at))
	}
	if line, mixed := mixedJSON(stdout); mixed {
		return nil, fmt.Errorf("stdout mixes JSON with other text (line %d); print logs to stderr", line)
	}
	if looksLikeJSON(trimmed) {
		excerpt := string(trimmed)
		if redact != nil {
			excerpt = redact(excerpt)
		}
		if len(excerpt) > 200 {
			excerpt = strings.ToValidUTF8(excerpt[:200], "") + "…"
		}
		return nil, fmt.Errorf("stdout starts with %q but is not valid JSON: %v (stdout: %s)", trimmed[:1], err, excerpt)
	}
	return string(trimmed), nil
}

// mixedJSON looks for lines of stdout that hold a JSON object or array (it
// starts a line and ends one), with other text before or after them; it returns the line
// (1-based) where the first other text is. At most maxJSONStarts lines that
// look like JSON are tried.
func mixedJSON(stdout []byte) (line int, mixed bool) {
	first := firstNonSpace(stdout)
	for off, tries := 0, 0; off < len(stdout) && tries < maxJSONStarts; {
		end := len(stdout)
		if nl := bytes.IndexByte(stdout[off:], '\n'); nl >= 0 {
			end = off + nl
		}
		text := bytes.TrimSpace(stdout[off:end])
		if len(text) > 0 && (text[0] == '{' || text[0] == '[') && (looksLikeJSON(text) || len(text) == 1) {
			tries++
			start := off + bytes.IndexByte(stdout[off:end], text[0])
			dec := json.NewDecoder(bytes.NewReader(stdout[start:]))
			var raw json.RawMessage
			// The value must end its line: "[ ] todo" is text.
			if dec.Decode(&raw) == nil && endsLine(stdout[start+int(dec.InputOffset()):]) {
				if first < start {
					return lineAt(stdout, first), true
				}
				after := start + int(dec.InputOffset())
				if i := firstNonSpace(stdout[after:]); i >= 0 {
					return lineAt(stdout, after+i), true
				}
			}
		}
		off = end + 1
	}
	return 0, false
}

// endsLine reports whether b starts with white space up to a newline or its end.
func endsLine(b []byte) bool {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	return len(bytes.TrimSpace(line)) == 0
}

// firstNonSpace is the index of the first byte of b that is not white
// space, or -1.
func firstNonSpace(b []byte) int {
	return bytes.IndexFunc(b, func(r rune) bool { return !strings.ContainsRune(" \t\r\n", r) })
}

// lineAt is the 1-based line of b that offset off is on.
func lineAt(b []byte, off int) int { return 1 + bytes.Count(b[:off], []byte{'\n'}) }

// looksLikeJSON reports whether b (trimmed) starts like a JSON object or
// array: with {, or with [ followed by {, [, " or ], or with [ and ending
// with ]; so "[INFO] done" and "[1/3] done" are text.
func looksLikeJSON(b []byte) bool {
	switch {
	case len(b) == 0:
		return false
	case b[0] == '{':
		return true
	case b[0] != '[':
		return false
	case b[len(b)-1] == ']':
		return true
	}
	rest := bytes.TrimLeft(b[1:], " \t\r\n")
	return len(rest) > 0 && bytes.IndexByte([]byte(`{["]`), rest[0]) >= 0
}

// ScriptFailure is a script that reported {"success": false, "error": ...}.
type ScriptFailure struct{ Message string }

func (e *ScriptFailure) Error() string { return e.Message }

// unwrapEnvelope applies the success/data/error envelope of docs/semantics.md#script-agents.
func unwrapEnvelope(v any) (any, error) {
	if msg, failed := envelopeFailure(v); failed {
		return nil, &ScriptFailure{Message: msg}
	}
	if m, ok := v.(map[string]any); ok {
		if ok, isBool := m["success"].(bool); isBool && ok {
			if data, has := m["data"]; has {
				return data, nil
			}
		}
	}
	return v, nil
}

// envelopeFailure reports whether v is {"success": false, ...} and its message.
func envelopeFailure(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	if success, isBool := m["success"].(bool); !isBool || success {
		return "", false
	}
	switch e := m["error"].(type) {
	case nil:
		return "script reported failure (success: false) without an error message", true
	case string:
		if e == "" {
			return "script reported failure (success: false) without an error message", true
		}
		return e, true
	default:
		b, _ := json.Marshal(e)
		return string(b), true
	}
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// inputData is the stdin object less context (docs/cli.md#the-result).
func inputData(req *agent.Request) map[string]any {
	m := scriptexec.BaseInputData(req)
	m["parameters"] = orEmpty(SpecOf(req.Agent).Parameters)
	return m
}
