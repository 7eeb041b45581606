package llm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/runners"
)

// approvalDoc is a strict-mode object schema: {approved: boolean}.
func approvalDoc() map[string]any {
	return map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"approved": map[string]any{"type": "boolean"}},
		"required":             []any{"approved"},
		"additionalProperties": false,
	}
}

// schemaAgent is an LLM agent with output_schema doc and repairs repair turns.
func schemaAgent(t *testing.T, doc map[string]any, repairs int) ensemble.Agent {
	t.Helper()
	s, err := ensemble.CompileOutputSchema(doc)
	if err != nil {
		t.Fatal(err)
	}
	return ensemble.Agent{Spec: &Spec{OutputRepairs: repairs}, OutputSchema: s}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// The schema reaches OpenAI as response_format json_schema (strict when it
// fits strict mode); a reply that fails it gets a repair turn whose user
// message carries the validation errors, and the repaired reply is the
// output (docs/llm.md#output-schemas).
func TestOutputSchemaOpenAIRepairSucceeds(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(oaText(`{"approved": "yes"}`), oaText("```json\n{\"approved\": true}\n```")))
	e, a := newEnsemble(t, openaiProfile(srv.URL), schemaAgent(t, approvalDoc(), 1))
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "review this"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if !reflect.DeepEqual(res.Output, map[string]any{"approved": true}) || res.StopReason != StopEndTurn || res.Usage.Requests != 2 {
		t.Errorf("output %#v stop %s usage %+v", res.Output, res.StopReason, res.Usage)
	}
	reqs := srv.requests()
	want := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "analyst", "schema": approvalDoc(), "strict": true}}
	for i, r := range reqs {
		if got := r.Body["response_format"]; toJSON(got) != toJSON(want) {
			t.Errorf("request %d: response_format %s, want %s", i+1, toJSON(got), toJSON(want))
		}
	}
	msgs := messages(t, reqs[1])
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m["role"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant,user" {
		t.Fatalf("roles %v", roles)
	}
	mustContain(t, msgs[3]["content"].(string), "Your reply does not match the required JSON Schema: at '/approved': got string, want boolean")
	// The repair turn stays in the conversation and in the record.
	if stored := storedMessages(t, res); len(stored) != 4 || stored[2].Role != RoleUser {
		t.Errorf("stored %+v", stored)
	}
}

// A reply still invalid once the repairs are spent fails the execution
// with the validation errors and the reply quoted; with output_repairs: 0
// no repair is asked.
func TestOutputSchemaRepairFails(t *testing.T) {
	t.Parallel()
	for _, repairs := range []int{0, 2} {
		srv := newFakeServer(t, scripted(oaText(`{"approved": "yes"}`), oaText(`not json`), oaText(`{"approved": 1}`)))
		e, a := newEnsemble(t, openaiProfile(srv.URL), schemaAgent(t, approvalDoc(), repairs))
		res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "review this"))
		want := `the output does not match output_schema: at '/approved': got string, want boolean; the reply was "{\"approved\": \"yes\"}"`
		if repairs == 2 {
			want = `the output does not match output_schema: at '/approved': got number, want boolean; the reply after 2 repair turns was "{\"approved\": 1}"`
			mustContain(t, toJSON(messages(t, srv.requests()[2])), "Your reply is not the JSON the required JSON Schema asks for: the reply is not valid JSON")
		}
		var se *runners.SchemaError
		if res.Err == nil || res.Err.Error() != want || !errors.As(res.Err, &se) {
			t.Errorf("repairs %d: err = %v, want %q", repairs, res.Err, want)
		}
		if n := len(srv.requests()); n != repairs+1 || res.Usage.Requests != repairs+1 {
			t.Errorf("repairs %d: %d requests, usage %+v", repairs, n, res.Usage)
		}
	}
}

// Ollama's OpenAI-compatible endpoint takes any schema as response_format
// (Ollama hands it to its format); OpenAI takes only an object, so an
// array schema is only checked. A schema that does not fit strict mode
// is sent with strict: false.
func TestOutputSchemaOpenAIAndOllamaFormats(t *testing.T) {
	t.Parallel()
	list := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	loose := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	for _, tt := range []struct {
		provider string
		doc      map[string]any
		want     string // response_format as JSON; "" = none
	}{
		{"ollama", list, `{"json_schema":{"name":"analyst","schema":` + toJSON(list) + `,"strict":true},"type":"json_schema"}`},
		{"openai", list, ""},
		{"openai", loose, `{"json_schema":{"name":"analyst","schema":` + toJSON(loose) + `,"strict":false},"type":"json_schema"}`},
	} {
		reply := `["a","b"]`
		if tt.doc["type"] == "object" {
			reply = `{"a": "x"}`
		}
		srv := newFakeServer(t, scripted(oaText(reply)))
		p := openaiProfile(srv.URL)
		if tt.provider == "ollama" {
			p = ensemble.ModelProfile{Provider: "ollama", Model: "llama3.2", BaseURL: srv.URL}
		}
		e, a := newEnsemble(t, p, schemaAgent(t, tt.doc, 1))
		res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
		if res.Err != nil {
			t.Fatalf("%s %v: %v", tt.provider, tt.doc["type"], res.Err)
		}
		got := ""
		if rf, ok := srv.requests()[0].Body["response_format"]; ok {
			got = toJSON(rf)
		}
		if got != tt.want {
			t.Errorf("%s %v: response_format\n got %s\nwant %s", tt.provider, tt.doc["type"], got, tt.want)
		}
	}
}

// Anthropic gets the schema as a tool's input_schema with tool_choice
// forcing it; the tool's input is the output. A wrong input gets a repair
// turn like a wrong reply.
func TestOutputSchemaAnthropicForcedTool(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		anReply("tool_use", 10, 4, anToolUse("toolu_1", OutputToolName, map[string]any{"approved": "yes"})),
		anReply("tool_use", 10, 4, anText("Here."), anToolUse("toolu_2", OutputToolName, map[string]any{"approved": true})),
	))
	e, a := newEnsemble(t, anthropicProfile(srv.URL), schemaAgent(t, approvalDoc(), 1))
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "review this"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if !reflect.DeepEqual(res.Output, map[string]any{"approved": true}) || res.StopReason != StopEndTurn {
		t.Errorf("output %#v stop %s", res.Output, res.StopReason)
	}
	reqs := srv.requests()
	tools := reqs[0].Body["tools"].([]any)
	tool := tools[len(tools)-1].(map[string]any)
	schema := tool["input_schema"].(map[string]any)
	if tool["name"] != OutputToolName || schema["type"] != "object" || toJSON(schema["properties"]) != `{"approved":{"type":"boolean"}}` ||
		toJSON(schema["required"]) != `["approved"]` || schema["additionalProperties"] != false {
		t.Errorf("tool %s", toJSON(tool))
	}
	if got := toJSON(reqs[0].Body["tool_choice"]); got != `{"name":"ensemble_output","type":"tool"}` {
		t.Errorf("tool_choice %s", got)
	}
	// The repair: the first output is an assistant text, then the errors.
	msgs := messages(t, reqs[1])
	if len(msgs) != 3 || msgs[1]["role"] != "assistant" || !strings.Contains(toJSON(msgs[1]), `{\"approved\":\"yes\"}`) {
		t.Fatalf("second request %s", reqs[1].Raw)
	}
	mustContain(t, toJSON(msgs[2]), "at '/approved': got string, want boolean")
}

// With tools of its own, an Anthropic agent may call them first: the
// output tool is offered with tool_choice any.
func TestOutputSchemaAnthropicWithTools(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, scripted(
		anReply("tool_use", 10, 4, anToolUse("toolu_1", "echo", map[string]any{"region": "EMEA"})),
		anReply("tool_use", 10, 4, anToolUse("toolu_2", OutputToolName, map[string]any{"approved": false})),
	))
	e, a := newEnsemble(t, anthropicProfile(srv.URL), schemaAgent(t, approvalDoc(), 1), echoTool)
	res := newTestRunner(Options{}).Run(context.Background(), request(e, a, "go"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if !reflect.DeepEqual(res.Output, map[string]any{"approved": false}) || res.Usage.Requests != 2 {
		t.Errorf("output %#v usage %+v", res.Output, res.Usage)
	}
	if got := toJSON(srv.requests()[0].Body["tool_choice"]); got != `{"type":"any"}` {
		t.Errorf("tool_choice %s", got)
	}
}

func TestStrictSchema(t *testing.T) {
	t.Parallel()
	nested := approvalDoc()
	nested["properties"].(map[string]any)["notes"] = map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}}
	nested["required"] = []any{"approved", "notes"}
	for _, tt := range []struct {
		doc  map[string]any
		want bool
	}{
		{approvalDoc(), true},
		{map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{}}, "additionalProperties": false}, false},
		{nested, false}, // notes is open
		{map[string]any{"type": "array", "items": approvalDoc()}, true},
	} {
		if got := strictSchema(tt.doc); got != tt.want {
			t.Errorf("strictSchema(%s) = %v, want %v", toJSON(tt.doc), got, tt.want)
		}
	}
}
