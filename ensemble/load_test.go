package ensemble_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/opaque"
	"github.com/ensemble-run/ensemble/kinds"
	askkind "github.com/ensemble-run/ensemble/kinds/ask"
	"github.com/ensemble-run/ensemble/kinds/llm"
	"github.com/ensemble-run/ensemble/kinds/script"
)

// testKinds are the built-in kinds of agent.
var testKinds = kinds.Builtin().Load(LoadOptions{}).Kinds

// noEnv is an empty environment, so tests never see the real one.
func noEnv(string) (string, bool) { return "", false }

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
}

// loadOK loads a file of testdata that must be valid.
func loadOK(t *testing.T, name string, opts LoadOptions) *Ensemble {
	t.Helper()
	if opts.LookupEnv == nil {
		opts.LookupEnv = noEnv
	}
	e, err := Load(filepath.Join("testdata", name), opts)
	if err != nil {
		t.Fatalf("Load(%s):\n%v", name, err)
	}
	return e
}

// checkErrors asserts that err is a *ErrorList holding exactly the wanted
// errors, in order, each written "LINE:COL: message substring"; the position is
// checked exactly, prefixed with file.
func checkErrors(t *testing.T, err error, file string, want ...string) {
	t.Helper()
	var list *ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error is %T (%v), want *ErrorList", err, err)
	}
	for i := range max(len(*list), len(want)) {
		switch {
		case i >= len(want):
			t.Errorf("unexpected error: %v", (*list)[i])
			continue
		case i >= len(*list):
			t.Errorf("missing error: %s: %s", file, want[i])
			continue
		}
		got := (*list)[i].Error()
		at, msg, _ := strings.Cut(want[i], ": ")
		if prefix := file + ":" + at + ": "; !strings.HasPrefix(got, prefix) || !strings.Contains(got[len(prefix):], msg) {
			t.Errorf("error %d:\n got: %s\nwant: %s%s…", i, got, prefix, msg)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		// yaml's syntax errors, in plain words at the column of the cause.
		{"syntax.yaml", []string{`4:13: this list is not closed: "]" is missing`}},
		{"syntax-noline.yaml", []string{`3:12: a value cannot contain ": " unless it is quoted: put the value in quotes`}},
		{"syntax-tab.yaml", []string{`3:1: tab character used for indentation; YAML needs spaces`}},
		{"syntax-indent-item.yaml", []string{`5:4: bad indentation: this line does not line up with the list items above it`}},
		{"syntax-indent-key.yaml", []string{`5:2: bad indentation: this line does not line up with the keys above it`}},
		{"syntax-indent-deep.yaml", []string{`4:7: bad indentation: this line is indented more than the line above it, which already has a value`}},
		{"syntax-quote.yaml", []string{`4:10: this quoted string is never closed`}},
		{"syntax-anchor.yaml", []string{`4:10: *question refers to no anchor: define &question before it`}},
		{"syntax-reserved.yaml", []string{`4:10: '@' cannot start a value: put the value in quotes`}},
		{"empty.yaml", []string{`1:1: the file is empty`}},
		{"two-docs.yaml", []string{`4:1: only one YAML document is allowed per file`}},
		{"types.yaml", []string{`3:3: agents must be a list, got a mapping`}},
		{"wrong-types.yaml", []string{
			`1:10: version must be 1, got string "1"`,
			`2:7: name must be a string, got a list`,
			`3:14: description must be a string, got a mapping`,
			`7:22: agent "a": timeout_seconds must be a number, got string "soon"`,
			`9:18: conversation of agent "a": max_turns must be an integer, got string "three"`,
			`10:30: conversation of agent "a": triggers_conversation must be true or false, got string "yes"`,
			`11:19: agent "a": dependencies must be a list, got string "b"`,
			`13:20: agent "b": unknown model_profile "m"`,
			`14:16: agent "b": max_steps must be an integer, got 2.5`,
			`15:12: agent "b": tools must be a list, got string "lookup"`,
			`16:5: agent #3 must be a mapping, got string "just a string"`,
			`17:22: conversation_limits must be a mapping, got a list`,
		}},
		{"version.yaml", []string{`1:10: version must be 1, got 2`}},
		{"names.yaml", []string{
			`1:1: name is required`,
			`3:5: agent #1: name is required`,
			`4:11: agent "Bad Name": name "Bad Name" is invalid: use only a-z, 0-9, _ and -`,
			`8:11: duplicate agent name "dup" (first declared on line 6)`,
		}},
		{"bad-ensemble-name.yaml", []string{
			`1:7: name "My Ensemble" is invalid`,
			`2:9: agents must not be empty`,
		}},
		{"kinds.yaml", []string{
			`5:5: agent "none": script, model_profile, ask, ensemble and dispatch are mutually exclusive; exactly one is required, found none`,
			`8:5: agent "two": script, model_profile, ask, ensemble and dispatch are mutually exclusive; found script and model_profile`,
			`12:5: agent "three": script, model_profile, ask, ensemble and dispatch are mutually exclusive; found script, model_profile and ask`,
			`14:10: agent "empty": ask must not be empty`,
			// The misspelled kind is the cause: no "found none" besides.
			`16:5: unknown key "scirpt" in agent "misspelled"; did you mean "script"?`,
			`19:5: unknown key "agent_name" in agent "misplaced": it belongs to a dependency: dependencies: [{agent_name: X, ...}]`,
			`20:5: unknown key "condition" in agent "misplaced": it belongs to a dependency: dependencies: [{agent_name: X, condition: ...}]`,
			`21:5: unknown key "requires_all" in agent "misplaced": it belongs to a dependency`,
			`22:5: unknown key "max_executions" in agent "misplaced": it belongs to a dependency`,
			// One indent too far left: not "did you mean tool_parallel".
			`23:5: unknown key "max_parallel" in agent "misplaced": it belongs under fan_out: fan_out: {max_parallel: ...}`,
			`24:5: unknown key "max_tokens" in agent "misplaced": it belongs under budget or context_window`,
		}},
		{"dependency-errors.yaml", []string{
			`8:9: agent "sink" depends on unknown agent "sorce"; did you mean "source"?`,
			`9:9: agent "sink" depends on itself`,
			`11:21: agent "sink" depends on "source" twice (first on line 10)`,
			`12:9: agent "sink": dependency #5 must be an agent name or a mapping, got a list`,
			`13:21: agent "sink" depends on "source" twice (first on line 10)`,
			`14:23: dependency "source" of agent "sink": requires_all must be true or false, got string "maybe"`,
			`15:25: dependency "source" of agent "sink": max_executions must be at least 1, got 0`,
			`16:9: dependency #7 of agent "sink": agent_name is required`,
			`17:8: agent "sink": dependency #8 must not be empty`,
		}},
		{"conditions.yaml", []string{
			`9:20: dependency "a" of agent "b": condition does not compile: unexpected token`,
			`14:20: dependency "a" of agent "c": condition does not compile: condition must be boolean`,
			`19:20: dependency "a" of agent "d": condition must not be empty`,
		}},
		{"references.yaml", []string{
			`8:11: duplicate tool name "lookup" (first declared on line 5)`,
			`10:5: tool "no_script": script is required`,
			`13:17: tool "bad_params": parameters must be a mapping, got a list`,
			`16:17: tool "not_object": parameters must describe an object (type: object), got type string`,
			`17:11: tool "bad name!": name "bad name!" is invalid`,
			`21:20: agent "a": unknown model_profile "fsat"; did you mean "fast"?`,
			`22:21: agent "a": unknown tool "lokup"; did you mean "lookup"?`,
			`22:28: agent "a": tool "lookup" listed twice`,
		}},
		{"kind-fields.yaml", []string{
			`7:5: agent "s": prompt is only for llm agents, not script agents`,
			`8:5: agent "s": output_format is only for llm agents`,
			`9:5: agent "s": tools is only for llm agents`,
			`10:5: agent "s": max_steps is only for llm agents`,
			`11:5: agent "s": context_window is only for llm agents`,
			`16:5: agent "l": parameters is only for script agents, not llm agents`,
			`17:5: agent "l": env is only for script agents`,
			`18:20: agent "l": output_format must be text or json, got "yaml"`,
			`21:5: agent "q": prompt is only for llm agents, not ask agents`,
			`22:5: agent "q": env is only for script agents, not ask agents`,
		}},
		{"parameters.yaml", []string{`5:17: agent "s": parameters holds .inf or .nan, which JSON cannot carry`}},
		{"env-errors.yaml", []string{
			`6:13: env of agent "s": LIST must be a string, got a list`,
			`7:7: env of agent "s": "1BAD" is not a valid environment variable name`,
		}},
		{"limits.yaml", []string{
			`5:22: tool "t": timeout_seconds must be at least 0.001 seconds (1ms), got -1`,
			`7:57: model profile "m": timeout_seconds must be at least 0.001 seconds (1ms), got 0`,
			`7:72: model profile "m": max_tokens must be at least 1, got 0`,
			`11:22: agent "a": timeout_seconds must be at least 0.001 seconds (1ms), got 1e-12`,
			`12:16: agent "a": max_steps must be at least 1, got 0`,
			`13:31: conversation of agent "a": max_turns must be at least 1, got 0`,
			`15:20: conversation_limits: max_total_turns must be at least 1, got 0`,
			`16:29: conversation_limits.max_agent_executions: a must be at least 1, got 0`,
			`16:32: conversation_limits.max_agent_executions: unknown agent "b"`,
			`17:20: conversation_limits: timeout_seconds must be at least 0.001 seconds (1ms), got 0.0009`,
			`18:25: conversation_limits: parallel_agent_limit must be at least 1, got -2`,
		}},
		{"profiles.yaml", []string{
			`3:12: model profile "nothing": provider is required`,
			`3:12: model profile "nothing": model is required`,
			`4:28: model profile "bad-provider": provider must be one of openai, anthropic, ollama, got "gemini"`,
			`5:63: model profile "literal-key": api_key_env names the variable holding the key, not the key`,
			`6:64: model profile "bad-key-name": api_key_env must be the name of an environment variable`,
			`7:11: model profile "no-key": api_key_env is required for provider anthropic`,
			`9:57: model profile "knobs": temperature must be between 0 and 2, got 3`,
			`9:72: model profile "knobs": max_tokens must be an integer, got string "many"`,
			`9:88: model profile "knobs": base_url must be an http or https URL, got "localhost:11434"`,
			`10:3: model profile name "Upper" is invalid`,
		}},
		{"context-window.yaml", []string{
			`8:32: context_window of model profile "bad": strategy must be one of oldest_first, middle_out, recent_turns, got "newest"`,
			`8:54: context_window of model profile "bad": max_messages must be at least 1, got 0`,
			`9:63: context_window of model profile "no-limit" sets no limit: give max_tokens or max_messages`,
			`10:63: context_window of model profile "no-turns": recent_turns is required`,
			`11:83: context_window of model profile "extra-turns": recent_turns only applies to strategy recent_turns`,
			`18:21: context_window of agent "b" must be a mapping, got 5`,
		}},
		{"scripts.yaml", []string{
			`4:13: tool "t": script "scripts/missing.py" does not exist`,
			`6:13: tool "crlf": script "scripts/crlf-tool" has Windows line endings (CRLF): its #! line ends in a carriage return, so it cannot start; convert it with dos2unix or sed -i 's/\r$//'`,
			`9:13: agent "missing": script "scripts/nope.sh" does not exist`,
			`11:13: agent "folder": script "scripts" is a folder, not a file`,
			`13:13: agent "plain": script "scripts/plain.txt" is not executable and has no known extension`,
			`17:13: agent "crlf": script "scripts/crlf.py" has Windows line endings (CRLF)`,
			`19:13: agent "no_shebang": script "scripts/no-shebang" is executable but has no #! line, no known extension (.py, .sh, .js, .rb) and is not a binary: add a first line such as #!/bin/sh`,
		}},
		{"unrunnable.yaml", []string{
			// A cycle is reported once, at its first agent.
			`5:5: agent "a" can never run: it is in a cycle with no entry from outside: a → b → a`,
			`11:5: agent "downstream" can never run: it depends on "b", which is in the cycle with no entry from outside reported on line 5`,
			`14:5: agent "only_optional" can never run: it depends on "a", which is in the cycle with no entry from outside reported on line 5`,
			`31:5: agent "further" can never run: it depends on "downstream", which can never run because of the cycle with no entry from outside reported on line 5`,
			`34:5: agent "c1" can never run: it is in a cycle with no entry from outside: c1 → c7 → c6 → … → c3 → c2 → c1 (7 agents)`,
		}},
		// A cycle is reported even when other references are wrong; an
		// agent whose only problem is an already reported reference (an
		// unknown agent, itself) is not reported again, and a repeated name
		// runs when any agent of that name can.
		{"unrunnable-and-bad-refs.yaml", []string{
			`7:20: agent "typo" depends on unknown agent "strat"; did you mean "start"?`,
			`10:27: agent "selfish" depends on itself`,
			`11:5: agent "a" can never run: it is in a cycle with no entry from outside: a → b → a`,
			`17:5: agent "start" can never run: it depends on "a", which is in the cycle with no entry from outside reported on line 11`,
			`17:11: duplicate agent name "start" (first declared on line 3)`,
		}},
		// Outputs are stored and delivered by state key: two agents with
		// one key would be handed each other's outputs.
		{"state-keys.yaml", []string{
			`8:31: agent "b": state_key "data" is already the state key of agent "a" (line 5); each agent needs its own`,
			`12:11: agent "data": its state key "data" (its name) is already the state key of agent "a" (line 5); each agent needs its own`,
			`16:31: agent "d": state_key "d" is already the state key of agent "c" (line 11); each agent needs its own`,
		}},
		// Keys of context are state keys, known at load: the state key of
		// agent summarize is summary, not its name. Keys of executions are
		// agent names.
		{"context-keys.yaml", []string{
			`12:20: dependency "fetch" of agent "use": condition names context.fecth, but no agent has the state key "fecth"; did you mean "fetch"? (column 13 of the condition)`,
			`14:20: dependency "summarize" of agent "use": condition names context.summarize, but no agent has the state key "summarize"; did you mean "summary"? (column 36 of the condition)`,
			`19:20: dependency "use" of agent "later": condition names context.zzz, but no agent has the state key "zzz" (line 2, column 11 of the condition)`,
			// executions counts by agent name: one of no agent is 0 at
			// every turn.
			`26:20: dependency "use" of agent "loop": condition names executions.summary, but no agent is named "summary"; "summary" is the state key of agent "summarize", and executions counts by agent name (column 12 of the condition)`,
			`26:20: dependency "use" of agent "loop": condition names executions.lop, but no agent is named "lop"; did you mean "loop"? (column 66 of the condition)`,
		}},
		{"unknown-keys.yaml", []string{
			`2:1: unknown top-level key "agnets"; did you mean "agents"?`,
			`5:40: unknown key "max_token" in model profile "m"; did you mean "max_tokens"?`,
			`5:86: unknown key "stratgy" in context_window of model profile "m"; did you mean "strategy"?`,
			`9:5: unknown key "timeout" in tool "t"`,
			`13:5: unknown key "dependecies" in agent "x"; did you mean "dependencies"?`,
			`14:20: unknown key "max_turn" in conversation of agent "x"; did you mean "max_turns"?`,
			`15:39: unknown key "zzz" in context_window of agent "x"`,
			`20:9: unknown key "conditon" in dependency "x" of agent "y"; did you mean "condition"?`,
			`23:3: unknown key "max_total_turn" in conversation_limits; did you mean "max_total_turns"?`,
		}},
		// the names a user guesses for the run's limits: max_turns is not
		// a misspelt max_tokens, a budget
		{"limit-aliases.yaml", []string{
			`6:3: unknown key "max_turns" in conversation_limits; did you mean "max_total_turns"?`,
			`7:3: unknown key "timeout" in conversation_limits; did you mean "timeout_seconds"?`,
			`8:3: unknown key "parallel" in conversation_limits; did you mean "parallel_agent_limit"?`,
			`9:3: unknown key "max_executions" in conversation_limits; did you mean "max_agent_executions"?`,
		}},
		{"many-mistakes.yaml", []string{
			`1:10: version must be 1, got 3`,
			`2:7: name "Many Mistakes" is invalid`,
			`3:1: unknown top-level key "descripton"; did you mean "description"?`,
			`5:61: model profile "fast": api_key_env names the variable holding the key, not the key`,
			`8:13: tool "search": script "scripts/search.py" does not exist`,
			`11:20: agent "writer": unknown model_profile "fats"; did you mean "fast"?`,
			`12:13: agent "writer": unknown tool "serch"; did you mean "search"?`,
			`13:5: unknown key "dependecies" in agent "writer"; did you mean "dependencies"?`,
			`16:5: agent "reviewer": script, model_profile, ask, ensemble and dispatch are mutually exclusive; found script and ask`,
			`19:20: dependency "writer" of agent "reviewer": condition does not compile`,
			`20:25: dependency "writer" of agent "reviewer": max_executions must be at least 1, got 0`,
			`21:11: duplicate agent name "writer" (first declared on line 10)`,
			`23:31: conversation of agent "writer": max_turns must be at least 1, got 0`,
			`25:20: conversation_limits: max_total_turns must be at least 1, got -1`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join("testdata", tt.file)
			e, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
			if e != nil {
				t.Errorf("got an Ensemble along with errors")
			}
			checkErrors(t, err, file, tt.want...)
		})
	}
}

func TestIterativeAnalysis(t *testing.T) {
	t.Parallel()
	e := loadOK(t, "iterative-analysis/ensemble.yaml", LoadOptions{Kinds: testKinds})
	dir, _ := filepath.Abs("testdata/iterative-analysis")
	if e.Dir != dir || e.Path != filepath.Join(dir, "ensemble.yaml") || len(e.Hash) != 64 {
		t.Errorf("Dir %q, Path %q, Hash %q", e.Dir, e.Path, e.Hash)
	}
	if e.Version != 1 || e.Name != "iterative-analysis" || e.Input != "Sales figures for Q3" {
		t.Errorf("header: %d %q %q", e.Version, e.Name, e.Input)
	}
	want := Limits{MaxTotalTurns: 15, MaxAgentExecutions: map[string]int{"llm_analyzer": 3}, Timeout: 600 * time.Second, ParallelAgentLimit: 5}
	if e.Limits.MaxTotalTurns != want.MaxTotalTurns || e.Limits.Timeout != want.Timeout ||
		e.Limits.ParallelAgentLimit != want.ParallelAgentLimit || e.Limits.MaxAgentExecutions["llm_analyzer"] != 3 {
		t.Errorf("limits %+v, want %+v", e.Limits, want)
	}

	m := e.Models["efficient"]
	if m == nil || m.Provider != "openai" || m.Model != "gpt-4o-mini" || m.BaseURL != "" || m.APIKeyEnv != "OPENAI_API_KEY" ||
		*m.Temperature != 0.2 || m.MaxTokens != 1024 || m.SystemPrompt != "You are precise." || m.Timeout != 120*time.Second {
		t.Errorf("profile %+v", m)
	}
	if got := e.SecretEnvNames(); !slices.Equal(got, []string{"OPENAI_API_KEY"}) {
		t.Errorf("SecretEnvNames = %v", got)
	}

	tool := e.Tool("lookup_region")
	if tool == nil || tool.Timeout != 10*time.Second || tool.ScriptPath != filepath.Join(dir, "tools/lookup_region.py") ||
		tool.Parameters["type"] != "object" || !slices.Equal(tool.Parameters["required"].([]any), []any{"region"}) {
		t.Errorf("tool %+v", tool)
	}

	var names []string
	for i, a := range e.Agents {
		names = append(names, a.Name)
		if a.Index != i || e.Agent(a.Name) != a {
			t.Errorf("agent %q: index %d, lookup %p", a.Name, a.Index, e.Agent(a.Name))
		}
	}
	if !slices.Equal(names, []string{"data_extractor", "llm_analyzer", "user_clarification", "final_synthesis"}) {
		t.Fatalf("agents %v", names)
	}

	x := e.Agent("data_extractor")
	if x.Kind != (script.Kind{}) || script.SpecOf(x).Path != filepath.Join(dir, "scripts/extract.py") || x.StateKey() != "extracted_data" ||
		x.Conversation.MaxTurns != 1 || x.Timeout != 0 || len(script.SpecOf(x).Parameters["columns"].([]any)) != 2 || x.Pos != (Pos{28, 5}) {
		t.Errorf("data_extractor %+v", x)
	}

	an := e.Agent("llm_analyzer")
	if s := llm.SpecOf(an); an.Kind != (llm.Kind{}) || s.ModelProfile != "efficient" || s.OutputFormat != "json" || s.MaxSteps != 20 ||
		!slices.Equal(s.Tools, []string{"lookup_region"}) || an.Conversation.MaxTurns != 3 || !strings.HasPrefix(s.Prompt, "Analyze the data.") {
		t.Errorf("llm_analyzer %+v", an)
	}
	if d := an.Dependencies; len(d) != 2 ||
		*d[0] != (Dependency{Pos: Pos{42, 9}, AgentName: "data_extractor", RequiresAll: true}) ||
		*d[1] != (Dependency{Pos: Pos{43, 9}, AgentName: "user_clarification", RequiresAll: false}) {
		t.Errorf("llm_analyzer dependencies %+v %+v", d[0], d[1])
	}

	ask := e.Agent("user_clarification")
	dep := ask.Dependencies[0]
	if ask.Kind != (askkind.Kind{}) || askkind.SpecOf(ask).Question != "The analyzer needs clarification." || dep.MaxExecutions != 3 ||
		dep.Condition != "context.llm_analyzer?.needs_clarification == true" || opaque.Get(dep.Program) == nil || !dep.RequiresAll {
		t.Errorf("user_clarification %+v, dependency %+v", ask, dep)
	}

	fin := e.Agent("final_synthesis")
	if s := llm.SpecOf(fin); s.OutputFormat != "text" || s.MaxSteps != DefaultMaxSteps || fin.Conversation.MaxTurns != DefaultMaxTurns || opaque.Get(fin.Dependencies[0].Program) == nil {
		t.Errorf("final_synthesis %+v", fin)
	}
	if u := e.Unrunnable(); u != nil {
		t.Errorf("Unrunnable = %v", u)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	e := loadOK(t, "dependencies.yaml", LoadOptions{Kinds: testKinds})
	l := e.Limits
	if e.Version != 1 || l.MaxTotalTurns != DefaultMaxTotalTurns || l.Timeout != DefaultTimeout ||
		l.ParallelAgentLimit != DefaultParallelAgentLimit || l.MaxAgentExecutions != nil {
		t.Errorf("defaults: version %d, limits %+v", e.Version, l)
	}
}

func TestDependencyForms(t *testing.T) {
	t.Parallel()
	e := loadOK(t, "dependencies.yaml", LoadOptions{Kinds: testKinds})
	short := e.Agent("short").Dependencies
	if len(short) != 1 || *short[0] != (Dependency{Pos: Pos{7, 20}, AgentName: "source", RequiresAll: true}) {
		t.Errorf("short form: %+v", short[0])
	}
	long := e.Agent("long").Dependencies
	if len(long) != 2 {
		t.Fatalf("long: %d dependencies", len(long))
	}
	if d := long[0]; d.AgentName != "source" || d.RequiresAll || d.MaxExecutions != 2 || d.Condition != "context.source != nil" || opaque.Get(d.Program) == nil || d.Pos != (Pos{11, 9}) {
		t.Errorf("long form: %+v", d)
	}
	if d := long[1]; d.AgentName != "short" || !d.RequiresAll || d.MaxExecutions != 0 || opaque.Get(d.Program) != nil {
		t.Errorf("short form among long ones: %+v", d)
	}
}

func TestScriptAgentFields(t *testing.T) {
	t.Parallel()
	s := script.SpecOf(loadOK(t, "env.yaml", LoadOptions{Kinds: testKinds}).Agent("s"))
	params, err := json.Marshal(s.Parameters)
	if want := `{"count":3,"day":"2024-01-01","nested":{"1":"one","list":["a",{"b":"c"}]}}`; err != nil || string(params) != want {
		t.Errorf("parameters %s (%v), want %s", params, err, want)
	}
	env := s.Env
	want := map[string]string{"NUMBER": "3", "FLAG": "true", "EMPTY": "", "TEXT": "hello"}
	if len(env) != len(want) {
		t.Errorf("env %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env[%s] = %q, want %q", k, env[k], v)
		}
	}
	e := loadOK(t, "timeouts.yaml", LoadOptions{Kinds: testKinds})
	if e.Agent("a").Timeout != 1500*time.Millisecond || e.Agent("shortest").Timeout != MinTimeout || e.Limits.Timeout != 30*time.Second {
		t.Errorf("timeouts %v %v", e.Agent("a").Timeout, e.Limits.Timeout)
	}
}

func TestMergeKeysAndExtensions(t *testing.T) {
	t.Parallel()
	e := loadOK(t, "merge-keys.yaml", LoadOptions{Kinds: testKinds})
	if a, b := e.Agent("a"), e.Agent("b"); script.SpecOf(a).Script != "scripts/ok.sh" || a.Timeout != 5*time.Second || script.SpecOf(b).Script != "scripts/ok.sh" || b.Timeout != 9*time.Second {
		t.Errorf("merged agents: %+v %+v", a, b)
	}
	if c := e.Agent("c"); c == nil || script.SpecOf(c).Script != "scripts/ok.sh" || len(e.Agent("b").Dependencies) != 2 {
		t.Errorf("agent named through a merge key: %+v", c)
	}
	if m := e.Models["small"]; m.Provider != "ollama" || m.Model != "llama3:8b" {
		t.Errorf("merged profile: %+v", m)
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	e := loadOK(t, "expand.yaml", LoadOptions{Kinds: testKinds, LookupEnv: envOf(map[string]string{
		"PROVIDER": "ollama", "MODEL": "qwen", "PRICE": "5", "HOME": "/root", "EMPTY": "",
	})})
	m := e.Models["m"]
	if m.Provider != "ollama" || m.Model != "qwen-latest" || m.BaseURL != "http://localhost:11434/v1" {
		t.Errorf("expanded profile %+v", m)
	}
	if want := "Costs 5; literal ${MODEL}; fallback [none] []; $HOME stays"; m.SystemPrompt != want {
		t.Errorf("system_prompt %q, want %q", m.SystemPrompt, want)
	}
	e = loadOK(t, "expand.yaml", LoadOptions{Kinds: testKinds, LookupEnv: envOf(map[string]string{
		"PROVIDER": "ollama", "MODEL": "qwen", "PRICE": "5", "BASE_URL": "http://gpu:11434/v1", "EMPTY": "set",
	})})
	if m := e.Models["m"]; m.BaseURL != "http://gpu:11434/v1" || !strings.Contains(m.SystemPrompt, "[set]") {
		t.Errorf("a set variable wins over its fallback: %+v", m)
	}

	// An unset variable is an error naming it and the field, never "".
	file := filepath.Join("testdata", "expand.yaml")
	_, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, file,
		`4:15: model profile "m": provider uses ${PROVIDER}, which is not set; set it, or give a fallback with ${PROVIDER:-default}`,
		`5:12: model profile "m": model uses ${MODEL}, which is not set`,
		`7:20: model profile "m": system_prompt uses ${PRICE}, which is not set`)
}

func TestProfileFiles(t *testing.T) {
	t.Parallel()
	shared, env := filepath.Join("testdata", "profiles", "shared.yaml"), filepath.Join("testdata", "profiles", "env.yaml")
	e := loadOK(t, "uses-profiles.yaml", LoadOptions{Kinds: testKinds, ProfileFiles: []string{shared, "", env}})
	for name, want := range map[string]string{"fast": "from-shared", "clash": "from-file", "early": "from-shared", "late": "from-env"} {
		if got := e.Models[name].Model; got != want {
			t.Errorf("profile %s comes %s, want %s", name, got, want)
		}
	}
	if f := e.Models["late"].File; f != env {
		t.Errorf("profile late declared in %q, want %q", f, env)
	}

	file := filepath.Join("testdata", "uses-profiles.yaml")
	_, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	checkErrors(t, err, file,
		`6:20: agent "a": unknown model_profile "fast"`,
		`10:20: agent "c": unknown model_profile "early"`,
		`12:20: agent "d": unknown model_profile "late"`)
}

func TestProfileFileErrors(t *testing.T) {
	t.Parallel()
	bad, badProfile := filepath.Join("testdata", "profiles", "bad.yaml"), filepath.Join("testdata", "profiles", "bad-profile.yaml")
	missing := filepath.Join("testdata", "profiles", "missing.yaml")
	file := filepath.Join("testdata", "uses-profiles.yaml")
	_, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: noEnv, ProfileFiles: []string{bad, badProfile, missing}})
	var list *ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %v", err)
	}
	got := list.Error()
	for _, want := range []string{
		bad + `:1:1: unknown top-level key "modles"; did you mean "models"?`,
		bad + `:1:1: models is required`,
		badProfile + `:2:35: unknown key "temprature" in model profile "x"; did you mean "temperature"?`,
		missing + `: cannot read this $ENSEMBLE_PROFILES file: no such file or directory`,
		file + `:6:20: agent "a": unknown model_profile "fast"`,
	} {
		if !strings.Contains(got, want+"\n") && !strings.HasSuffix(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}

	models, err := LoadProfiles(filepath.Join("testdata", "profiles", "shared.yaml"), noEnv)
	if err != nil || len(models) != 3 || models["fast"].Pos != (Pos{2, 3}) {
		t.Errorf("LoadProfiles = %v, %v", models, err)
	}
	_, err = LoadProfiles(badProfile, nil)
	checkErrors(t, err, badProfile, `2:35: unknown key "temprature"`)
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "nope.yaml")
	_, err := Load(file, LoadOptions{Kinds: testKinds})
	if err == nil || err.Error() != file+": cannot read: no such file or directory" {
		t.Errorf("err = %v", err)
	}
}

func TestUnrunnable(t *testing.T) {
	t.Parallel()
	agent := func(name string, deps ...*Dependency) *Agent { return &Agent{Name: name, Dependencies: deps} }
	req := func(name string) *Dependency { return &Dependency{AgentName: name, RequiresAll: true} }
	opt := func(name string) *Dependency { return &Dependency{AgentName: name} }
	tests := []struct {
		name   string
		agents []*Agent
		want   []string
	}{
		{"no dependencies", []*Agent{agent("a"), agent("b")}, nil},
		{"chain", []*Agent{agent("a"), agent("b", req("a")), agent("c", req("b"))}, nil},
		{"closed cycle", []*Agent{agent("a", req("b")), agent("b", req("a"))}, []string{"a", "b"}},
		{"cycle entered through an optional edge", []*Agent{agent("s"), agent("a", req("s"), opt("b")), agent("b", req("a"))}, nil},
		{"optional edges only, one runs", []*Agent{agent("s"), agent("a", opt("s"), opt("b")), agent("b", req("a"))}, nil},
		{"optional edges only, none runs", []*Agent{agent("a", opt("b")), agent("b", opt("a"))}, []string{"a", "b"}},
		{"required edge blocked despite optional", []*Agent{agent("s"), agent("a", opt("s"), req("x")), agent("x", req("x"))}, []string{"a", "x"}},
		{"unknown dependency", []*Agent{agent("a", req("ghost")), agent("b", opt("ghost"))}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := &Ensemble{Agents: tt.agents}
			e.Index()
			if got := e.Unrunnable(); !slices.Equal(got, tt.want) {
				t.Errorf("Unrunnable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPretty(t *testing.T) {
	t.Parallel()
	l := ErrorList{
		{File: "f.yaml", Line: 2, Column: 3, Message: "bad", Source: "\tx: y"},
		{File: "f.yaml", Message: "cannot read: denied"},
	}
	want := "f.yaml:2:3: bad\n    2 | \tx: y\n      | \t ^\nf.yaml: cannot read: denied"
	if got := l.Pretty(); got != want {
		t.Errorf("Pretty:\n%s\nwant:\n%s", got, want)
	}
	if got := l.Error(); got != "f.yaml:2:3: bad\nf.yaml: cannot read: denied" {
		t.Errorf("Error: %q", got)
	}
}

func TestSecretNotEchoed(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "profiles.yaml")
	_, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	if p := err.(*ErrorList).Pretty(); strings.Contains(p, "abcdefghijklmnop") {
		t.Errorf("the key leaks into the message:\n%s", p)
	}
}

// An executable binary needs no #! line: the test binary itself is one.
func TestScriptBinary(t *testing.T) {
	t.Parallel()
	bin, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	src := fmt.Sprintf("name: bin\nagents:\n  - name: b\n    script: %q\n    allow_outside: true\n", bin)
	if _, err := LoadBytes(filepath.Join("testdata", "bin.yaml"), []byte(src), LoadOptions{Kinds: testKinds, LookupEnv: noEnv}); err != nil {
		t.Errorf("a binary script: %v", err)
	}
}

// A variable named by any profile's api_key_env, in the ensemble file or a
// profiles file, declared before or after the use, is never expanded: the
// key would reach the state, the result and the graph.
func TestExpandRefusesKeys(t *testing.T) {
	t.Parallel()
	file, profiles := filepath.Join("testdata", "keys", "expand-key.yaml"), filepath.Join("testdata", "keys", "profiles.yaml")
	env := envOf(map[string]string{"MYKEY": "sk-secret-value-1", "OTHERKEY": "sk-secret-value-2"})
	_, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: env, ProfileFiles: []string{profiles}})
	got := err.Error()
	for _, want := range []string{
		file + `:5:12: model profile "m": model uses ${MYKEY}, the API key variable of profile "m"; keys are never expanded into the file`,
		file + `:7:20: model profile "m": system_prompt uses ${MYKEY}, the API key variable of profile "m"`,
		file + `:11:15: model profile "local": base_url uses ${OTHERKEY}, the API key variable of profile "other"`,
		file + `:12:25: model profile "local": options.metadata uses ${MYKEY}, the API key variable of profile "m"`,
		profiles + `:6:20: model profile "other": system_prompt uses ${MYKEY}, the API key variable of profile "m"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "sk-secret") {
		t.Errorf("a key's value in the error:\n%s", got)
	}
}

// A script must be under the ensemble file's folder, symbolic links
// resolved, unless allow_outside is set: /bin/sh would run the stdin JSON
// as shell code.
func TestScriptOutsideTheFolder(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "outside", "inner", "ensemble.yaml")
	_, err := Load(file, LoadOptions{Kinds: testKinds, LookupEnv: noEnv})
	const outside = `is outside the ensemble file's folder `
	checkErrors(t, err, file,
		`4:13: tool "shell": script "/bin/sh" `+outside,
		`10:13: agent "shell": script "/bin/sh" `+outside,
		`12:13: agent "up": script "../out.sh" `+outside,
		`14:13: agent "link": script "scripts/link.sh" `+outside,
		`16:13: agent "through-dir-link": script "up/out.sh" `+outside,
		`26:5: agent "asker": allow_outside is only for script, ensemble and dispatch agents, not ask agents`)
	if !strings.Contains(err.Error(), "set allow_outside: true") {
		t.Errorf("no hint at allow_outside: %v", err)
	}
}

// Profiles files given to the command (ProfileOverrides) win over the
// file's own profiles, and the file's so replaced is warned of; those of
// the environment (ProfileFiles) lose to both.
func TestProfileOverrides(t *testing.T) {
	t.Parallel()
	shared, env := filepath.Join("testdata", "profiles", "shared.yaml"), filepath.Join("testdata", "profiles", "env.yaml")
	over := filepath.Join(t.TempDir(), "over.yaml")
	if err := os.WriteFile(over, []byte("models:\n  clash: {provider: ollama, model: from-flag}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := loadOK(t, "uses-profiles.yaml", LoadOptions{Kinds: testKinds, ProfileOverrides: []string{over, shared}, ProfileFiles: []string{env}})
	for name, want := range map[string]string{"fast": "from-shared", "clash": "from-flag", "early": "from-shared", "late": "from-env"} {
		if got := e.Models[name].Model; got != want {
			t.Errorf("profile %s comes %s, want %s", name, got, want)
		}
	}
	if len(e.Warnings) != 1 || !strings.Contains(e.Warnings[0].Error(), `uses-profiles.yaml:3:3: model profile "clash" is replaced by the one of `+over) {
		t.Errorf("warnings %v", e.Warnings)
	}
}
