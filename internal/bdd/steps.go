package bdd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/conditions"
	"github.com/ensemble-run/ensemble/internal/jsonvalue"
	"github.com/ensemble-run/ensemble/internal/report"
	"github.com/ensemble-run/ensemble/internal/responses"
	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/state"
)

// StepDoc documents one built-in step.
type StepDoc struct {
	Keyword string // Given, When or Then (any keyword matches)
	Example string // the exact phrasing, with example arguments
	Doc     string // what it does
}

type stepDef struct {
	StepDoc
	re      string
	handler func(s *Scenario) any
}

// Steps lists the built-in steps, in the order of the README.
func Steps() []StepDoc {
	out := make([]StepDoc, len(stepDefs))
	for i, d := range stepDefs {
		out[i] = d.StepDoc
	}
	return out
}

// Quoted arguments are everything between the first and the last double
// quote of their place in the step, so they may hold quotes themselves;
// agent names and paths may not. In free text, \" is a quote (unq).
var stepDefs = []stepDef{
	// --- Given ---
	{StepDoc{"Given", `Given the ensemble "examples/iterative-analysis/ensemble.yaml"`,
		"Loads the ensemble file (relative to the feature file's folder). An invalid or missing file fails the scenario with every problem found."},
		`^the ensemble "([^"]*)"$`, func(s *Scenario) any { return s.givenEnsemble }},
	{StepDoc{"Given", "Given the ensemble:", "Loads the ensemble written in the doc string (YAML); its scripts resolve against the feature file's folder."},
		`^the ensemble:$`, func(s *Scenario) any { return s.givenInlineEnsemble }},
	{StepDoc{"Given", `Given the profiles file "profiles.yaml"`,
		"Adds a model profiles file (like --profiles), before or after the ensemble step: the ensemble is loaded with it."},
		`^the profiles file "([^"]*)"$`, func(s *Scenario) any { return s.givenProfiles }},
	{StepDoc{"Given", `Given the input "Sales figures for Q3"`, "The run's input (default: the file's input)."},
		`^the input "(.*)"$`, func(s *Scenario) any { return s.givenInput }},
	{StepDoc{"Given", "Given the input:", "The run's input is the doc string, as it is."},
		`^the input:$`, func(s *Scenario) any { return s.givenInputDoc }},
	{StepDoc{"Given", `Given agent "llm_analyzer" responds "plain text reply"`,
		"Queues one injected response for the agent: reply text, parsed like a real reply (JSON text becomes JSON)."},
		`^agent "([^"]*)" responds "(.*)"$`, func(s *Scenario) any { return s.givenResponds }},
	{StepDoc{"Given", `Given agent "llm_analyzer" responds:`,
		"Queues the doc string as the agent's next injected response. A doc string that starts with { or [ (or is typed \"\"\"json) must be JSON and is the output itself; \"\"\"yaml is YAML (a string in it is reply text); anything else, or \"\"\"text, is reply text."},
		`^agent "([^"]*)" responds:$`, func(s *Scenario) any { return s.givenRespondsDoc }},
	{StepDoc{"Given", `Given the responses file "responses.yaml"`,
		"Injects the responses of a responses file (the format of `run --responses`, see docs/testing.md), queued after those given so far; later steps queue after it."},
		`^the responses file "([^"]*)"$`, func(s *Scenario) any { return s.givenResponsesFile }},
	{StepDoc{"Given", `Given the recording "recording"`,
		"Replays a recording folder (made with `run --record`, see docs/recording.md): LLM agents and simulated users without injected responses are served from it, offline, and ask agents its answers; a request it lacks fails the agent with the first difference."},
		`^the recording "([^"]*)"$`, func(s *Scenario) any { return s.givenRecording }},
	{StepDoc{"Given", `Given agent "user_clarification" is simulated by model profile "small" with the prompt "You are a sales manager."`,
		"A model plays the agent with that persona (a simulated user, see docs/testing.md)."},
		`^agent "([^"]*)" is simulated by model profile "([^"]*)" with the prompt "(.*)"$`, func(s *Scenario) any { return s.givenSimulatedText }},
	{StepDoc{"Given", `Given agent "user_clarification" is simulated by model profile "small" with the prompt:`,
		"The same, with the persona in the doc string."},
		`^agent "([^"]*)" is simulated by model profile "([^"]*)" with the prompt:$`, func(s *Scenario) any { return s.givenSimulatedDoc }},
	{StepDoc{"Given", `Given ask agent "reviewer" is answered by the simulator "reject then approve"`,
		"A simulated person answers the ask agent with fixed values (see docs/testing.md): `always VALUE` gives VALUE every time, `V1 then V2 then V3` gives them in order and repeats the last. A value is JSON (`{\"approved\": true}`, `\"yes\"`, 42) or bare text (`approve`). Each must fit the agent as any answer must: a value that cannot fails this step, naming the agent and the value."},
		`^ask agent "([^"]*)" is answered by the simulator "(.*)"$`, func(s *Scenario) any { return s.givenSimulatorPolicy }},
	{StepDoc{"Given", `Given ask agent "reviewer" is answered by a simulated person with model profile "small", the goal "Publish a note that names EMEA" and at most 3 answers`,
		"A model plays a person with that goal and answers the ask agent, at most that many times: the next ask fails, saying the simulated person gave up. Its model requests are counted apart from the run's usage."},
		`^ask agent "([^"]*)" is answered by a simulated person with model profile "([^"]*)", the goal "(.*)" and at most (\d+) answers?$`, func(s *Scenario) any { return s.givenSimulatedPerson }},
	{StepDoc{"Given", "Given the turn limit is 5", "Overrides conversation_limits.max_total_turns (like --max-turns)."},
		`^the turn limit is (\d+)$`, func(s *Scenario) any { return s.givenTurnLimit }},
	{StepDoc{"Given", `Given the timeout is "5s"`, "Overrides the run's timeout (a Go duration: 500ms, 5s, 2m; like --timeout)."},
		`^the timeout is "([^"]*)"$`, func(s *Scenario) any { return s.givenTimeout }},
	{StepDoc{"Given", "Given the parallel limit is 2", "Overrides conversation_limits.parallel_agent_limit (like --parallel)."},
		`^the parallel limit is (\d+)$`, func(s *Scenario) any { return s.givenParallel }},
	{StepDoc{"Given", "Given the run is strict", "A read of a key its value does not have (or a null message to a model) ends the run strict_warning, exit 7 (like run --strict)."},
		`^the run is strict$`, func(s *Scenario) any { return s.givenStrict }},
	{StepDoc{"Given", `Given the judge "quality" uses model profile "small" with the rubric:`,
		"Declares a judge: a model that scores an agent's final output against the rubric in the doc string (which states the scale), replying {\"score\": n, \"reason\": \"...\"}. It is an LLM agent named by the judge's name: answered by `Given agent \"quality\" responds` (declared after the judge) or by the recording, and by its model only where LLM agents may reach theirs."},
		`^the judge "([^"]*)" uses model profile "([^"]*)" with the rubric:$`, func(s *Scenario) any { return s.givenJudge }},

	// --- When ---
	{StepDoc{"When", "When the ensemble runs", "Runs the ensemble to its end with what the Given steps set. Agents with no injected response: scripts run for real, LLM agents fail (a test reaches no model), and ask agents wait for an answer (a test has no terminal, and keeps the run for `answers`)."},
		`^the ensemble runs$`, func(s *Scenario) any { return s.whenRuns }},
	{StepDoc{"When", `When "reviewer" answers "{\"approved\": true}"`, "Resumes a run that waits for the agent's answer with that answer, read as any output (JSON text is JSON), as `resume --answer` does; the Then steps then check the resumed run. An agent the run does not wait for fails the step."},
		`^"([^"]*)" answers "(.*)"$`, func(s *Scenario) any { return s.whenAnswers }},
	{StepDoc{"When", `When "reviewer" answers:`, "The same, with the answer in the doc string."},
		`^"([^"]*)" answers:$`, func(s *Scenario) any { return s.whenAnswersDoc }},
	{StepDoc{"When", `When the ensemble "broken.yaml" is validated`, "Loads the file without failing the scenario when it is invalid, for the validation steps below; a file that does not exist fails the scenario."},
		`^the ensemble "([^"]*)" is validated$`, func(s *Scenario) any { return s.whenValidated }},
	{StepDoc{"When", "When this ensemble is validated:", "The same for an ensemble written in the doc string."},
		`^this ensemble is validated:$`, func(s *Scenario) any { return s.whenInlineValidated }},

	// --- Then: the run ---
	{StepDoc{"Then", `Then the completion reason is "completed"`, "completed, expectation_failed, max_total_turns, timeout, budget_exceeded, cancelled, awaiting_input or strict_warning."},
		`^the completion reason is "([^"]*)"$`, func(s *Scenario) any { return s.thenReason }},
	{StepDoc{"Then", "Then the exit code is 1", "The exit code `run` would have: 0 completed, 1 an execution failed, 3 the turn limit, 4 the timeout, 5 waiting for input, 6 a budget, 7 a warning of a strict run, 130 cancelled."},
		`^the exit code is (\d+)$`, func(s *Scenario) any { return s.thenExitCode }},
	{StepDoc{"Then", "Then the run failed", "The exit code is not 0: an execution failed (and no on: failure edge handled it), a limit or the timeout stopped the run, or an expectation of the file is false."},
		`^the run failed$`, func(s *Scenario) any { return s.thenRunFailed }},
	{StepDoc{"Then", `Then the run is waiting for input from "reviewer"`, "The run ended awaiting_input, and the agent is among the questions it waits for (its pending_input)."},
		`^the run is waiting for input from "([^"]*)"$`, func(s *Scenario) any { return s.thenWaitingFor }},
	{StepDoc{"Then", "Then the turn count is 4", "Turns completed."},
		`^the turn count is (\d+)$`, func(s *Scenario) any { return s.thenTurnCount }},
	{StepDoc{"Then", "Then the run has no errors", "No execution failed."},
		`^the run has no errors$`, func(s *Scenario) any { return s.thenNoErrors }},
	{StepDoc{"Then", "Then the run has no unhandled errors", "Every failed execution was handled: delivered through an on: failure edge to an agent that then succeeded (the run exits 0)."},
		`^the run has no unhandled errors$`, func(s *Scenario) any { return s.thenNoUnhandledErrors }},
	{StepDoc{"Then", "Then the run has 2 errors", "Exactly that many entries in the result's errors."},
		`^the run has (\d+) errors?$`, func(s *Scenario) any { return s.thenErrorCount }},
	{StepDoc{"Then", `Then there is a warning containing "needs_clarification"`, "A warning of the run (a condition that failed at run time, a read of a missing key) contains the text."},
		`^there is a warning containing "(.*)"$`, func(s *Scenario) any { return s.thenWarning }},
	{StepDoc{"Then", `Then the ensemble has a warning containing "trigger: all"`, "A warning of the loaded file (what `validate` warns about, such as a join inside a loop) contains the text; no run is needed."},
		`^the ensemble has a warning containing "(.*)"$`, func(s *Scenario) any { return s.thenLoadWarning }},
	{StepDoc{"Then", "Then the ensemble has no warnings", "The loaded file has no warning (`validate --strict` would pass)."},
		`^the ensemble has no warnings$`, func(s *Scenario) any { return s.thenNoLoadWarnings }},

	// --- Then: agents ---
	{StepDoc{"Then", `Then agent "llm_analyzer" ran 2 times`, "Executions of the agent, failed ones included (`1 time` works too)."},
		`^agent "([^"]*)" ran (\d+) times?$`, func(s *Scenario) any { return s.thenRanTimes }},
	{StepDoc{"Then", `Then agent "llm_analyzer" ran at least 2 times`, "At least that many executions."},
		`^agent "([^"]*)" ran at least (\d+) times?$`, func(s *Scenario) any { return s.thenRanAtLeast }},
	// --- Then: over the runs of a repeated scenario (passk.go) ---
	{StepDoc{"Then", "Then pass^3 is at least 0.8", "Checked once the scenario's runs (--repeat, @repeat) ended, not in each run: the unbiased estimate of the chance that 3 runs all pass, C(c, 3)/C(n, 3) for c passes of n runs, is at least the bound. The scenario needs at least 3 runs, and runs them all (no early stop)."},
		`^pass\^(\d+) is at least (\S+)$`, func(s *Scenario) any { return s.thenPassMetric }},
	{StepDoc{"Then", "Then pass@3 is at least 0.9", "As above, for the chance that at least one of 3 runs passes: 1 - C(n-c, 3)/C(n, 3)."},
		`^pass@(\d+) is at least (\S+)$`, func(s *Scenario) any { return s.thenPassMetric }},
	{StepDoc{"Then", `Then agent "llm_analyzer" ran at most 3 times`, "At most that many executions."},
		`^agent "([^"]*)" ran at most (\d+) times?$`, func(s *Scenario) any { return s.thenRanAtMost }},
	{StepDoc{"Then", `Then agent "final_synthesis" did not run`, "No execution."},
		`^agent "([^"]*)" did not run$`, func(s *Scenario) any { return s.thenDidNotRun }},
	{StepDoc{"Then", `Then agent "bugfix" was skipped`, "The agent has a record of a skip (its `when:` was false, or its dependencies were skipped): it did not run then."},
		`^agent "([^"]*)" was skipped$`, func(s *Scenario) any { return s.thenSkipped }},
	{StepDoc{"Then", `Then agent "data_extractor" ran before agent "llm_analyzer"`, "Both ran, and the first execution of the first came before the first execution of the second in the history."},
		`^agent "([^"]*)" ran before agent "([^"]*)"$`, func(s *Scenario) any { return s.thenRanBefore }},
	{StepDoc{"Then", `Then the agents ran in this order: "data_extractor, llm_analyzer, user_clarification"`, "The whole history, one name per execution, in order (within a turn: file order)."},
		`^the agents ran in this order: "([^"]*)"$`, func(s *Scenario) any { return s.thenOrder }},
	{StepDoc{"Then", "Then the conversation history is:", "The whole history, as a table with a header row; columns among turn, agent, execution, status (ok, failed or skipped), error and output (both: text the cell must contain; an empty cell checks nothing)."},
		`^the conversation history is:$`, func(s *Scenario) any { return s.thenHistory }},
	{StepDoc{"Then", `Then agent "x" failed with an error containing "timeout"`, "One of the agent's failed executions has an error containing the text."},
		`^agent "([^"]*)" failed with an error containing "(.*)"$`, func(s *Scenario) any { return s.thenFailedWith }},
	{StepDoc{"Then", `Then agent "x" did not fail`, "None of the agent's executions failed."},
		`^agent "([^"]*)" did not fail$`, func(s *Scenario) any { return s.thenDidNotFail }},
	{StepDoc{"Then", `Then agent "fetch" took less than 5 seconds`, "The agent ran, and each of its executions took less than that (its execution_time; decimals work: `0.5 seconds`). The execution of a fan-out is the time from its first instance's start to its last one's end; an instance (`agent \"summarize[1]\"`) is checked on its own. For other measures, write an expression over history: `sum(filter(history, .agent_name == 'fetch'), .execution_time) < 10`."},
		`^agent "([^"]*)" took less than (\d+(?:\.\d+)?) seconds?$`, func(s *Scenario) any { return s.thenTookLessThan }},
	{StepDoc{"Then", `Then agent "fetch" took at most 30s`, "The agent ran, and its executions took that long at most in all (the sum of their execution_time; a Go duration: 500ms, 30s, 2m). For each execution alone, use took less than N seconds."},
		`^agent "([^"]*)" took at most (\S+)$`, func(s *Scenario) any { return s.thenTookAtMost }},

	// --- Then: trajectories and spend (trajectory.go) ---
	{StepDoc{"Then", `Then agent "researcher" called tool "search.query"`, "One of the agent's executions called the tool (SERVER.TOOL for a tool of an MCP server, the name of a tool of the file), whatever its result; a fan-out agent's instances' calls count. The tool must be one of the agent's tools."},
		`^agent "([^"]*)" called tool "([^"]*)"$`, func(s *Scenario) any { return s.thenCalledTool }},
	{StepDoc{"Then", `Then agent "researcher" did not call tool "files.delete"`, "None of the agent's executions called the tool."},
		`^agent "([^"]*)" did not call tool "([^"]*)"$`, func(s *Scenario) any { return s.thenDidNotCallTool }},
	{StepDoc{"Then", `Then agent "researcher" called tools in this order: "search.query, files.read"`, "The agent called these tools in this order, over its executions: each listed call comes after the one before it, and other calls may come between them (a listed tool twice needs two calls)."},
		`^agent "([^"]*)" called tools in this order: "(.*)"$`, func(s *Scenario) any { return s.thenCalledInOrder }},
	{StepDoc{"Then", "Then the run made at most 6 model requests", "The run's model requests (its usage.requests: every LLM agent's, a simulated user's, child ensembles' included; injected responses and a simulated person answering an ask agent make none) are at most that many."},
		`^the run made at most (\d+) model requests?$`, func(s *Scenario) any { return s.thenRequestsAtMost }},
	{StepDoc{"Then", "Then the run cost at most 0.05", "The run's cost (its usage.cost, in the unit of the profiles' pricing) is at most that. With no priced profile the step fails: every request would cost 0."},
		`^the run cost at most (\S+)$`, func(s *Scenario) any { return s.thenCostAtMost }},
	{StepDoc{"Then", "Then the simulated people made 3 model requests", "The scenario's simulated people (ask agents answered by a simulated person) made exactly that many model requests, which the run's usage does not count."},
		`^the simulated people made (\d+) model requests?$`, func(s *Scenario) any { return s.thenSimulatedRequests }},

	{StepDoc{"Then", `Then the output of agent "llm_analyzer" contains "EMEA"`, "The agent's latest output (a string as it is, other values as compact JSON) contains the text."},
		`^the output of agent "([^"]*)" contains "(.*)"$`, func(s *Scenario) any { return s.thenOutputContains }},
	{StepDoc{"Then", `Then the output of agent "llm_analyzer" does not contain "APAC"`, "The reverse."},
		`^the output of agent "([^"]*)" does not contain "(.*)"$`, func(s *Scenario) any { return s.thenOutputNotContains }},
	{StepDoc{"Then", `Then the output of agent "user_clarification" is "Q3 only, EMEA region"`, "The latest output, as text, is exactly that."},
		`^the output of agent "([^"]*)" is "(.*)"$`, func(s *Scenario) any { return s.thenOutputIs }},
	{StepDoc{"Then", `Then the output of agent "llm_analyzer" is:`, "The latest output equals the doc string: JSON when it starts with { or [ (or \"\"\"json, \"\"\"yaml), else text."},
		`^the output of agent "([^"]*)" is:$`, func(s *Scenario) any { return s.thenOutputIsDoc }},
	{StepDoc{"Then", `Then the input of agent "llm_analyzer" contains "EMEA"`, "What the agent's latest execution was given (its input_data, as compact JSON) contains the text."},
		`^the input of agent "([^"]*)" contains "(.*)"$`, func(s *Scenario) any { return s.thenInputContains }},
	{StepDoc{"Then", `Then agent "summarize" ran over 3 items`,
		"The agent has a fan_out, and its latest execution ran over a list of that many items (one instance each; `1 item` works too)."},
		`^agent "([^"]*)" ran over (\d+) items?$`, func(s *Scenario) any { return s.thenRanOver }},
	{StepDoc{"Then", `Then instance "summarize[1]" received "the second chunk"`,
		"The instance's item in its latest execution (a string as it is, other values as compact JSON) is exactly that."},
		`^instance "([^"]*)" received "(.*)"$`, func(s *Scenario) any { return s.thenInstanceReceived }},
	{StepDoc{"Then", `Then instance "summarize[1]" received:`,
		"The instance's item equals the doc string: JSON when it starts with { or [ (or \"\"\"json, \"\"\"yaml), else text."},
		`^instance "([^"]*)" received:$`, func(s *Scenario) any { return s.thenInstanceReceivedDoc }},
	{StepDoc{"Then", `Then the final state of "extracted_data" is:`, "final_state[key] equals the doc string's JSON (or \"\"\"yaml, or \"\"\"text for a string)."},
		`^the final state of "([^"]*)" is:$`, func(s *Scenario) any { return s.thenFinalStateIs }},
	{StepDoc{"Then", `Then the final state has no "final_synthesis"`, "final_state has no such key."},
		`^the final state has no "([^"]*)"$`, func(s *Scenario) any { return s.thenFinalStateHasNo }},
	{StepDoc{"Then", `Then the expression "context.llm_analyzer.needs_clarification == false" is true`, "A condition (the language of dependency conditions: context, turn_count, executions, history, input) evaluated against the final state."},
		`^the expression "(.*)" is true$`, func(s *Scenario) any { return s.thenExprTrue }},
	{StepDoc{"Then", `Then the expression "executions.final_synthesis > 0" is false`, "The same, expecting false."},
		`^the expression "(.*)" is false$`, func(s *Scenario) any { return s.thenExprFalse }},
	{StepDoc{"Then", `Then the judge "quality" scores agent "final_synthesis" at least 4`, "The judge, given the agent's latest input and final output, scores it at least that (asked once per agent in a scenario); a lower score fails with the judge's score and reason."},
		`^the judge "([^"]*)" scores agent "([^"]*)" at least (\S+)$`, func(s *Scenario) any { return s.thenJudgeScores }},
	{StepDoc{"Then", `Then the judge "quality" scores agent "final_synthesis" at least 4 on a scale of 1 to 5`, "As above, on the rubric's scale, which the judge is told: a score outside it fails the step (a judge that says 100 where 5 is the best is wrong, not excellent)."},
		`^the judge "([^"]*)" scores agent "([^"]*)" at least (\S+) on a scale of (\S+) to (\S+)$`, func(s *Scenario) any { return s.thenJudgeScoresOnScale }},

	// --- Then: validation ---
	{StepDoc{"Then", "Then the ensemble is valid", "After a validated step: it loaded without problems."},
		`^the ensemble is valid$`, func(s *Scenario) any { return s.thenValid }},
	{StepDoc{"Then", `Then the ensemble is invalid with an error containing "mutually exclusive"`, "After a validated step: loading failed, and one of its problems (`FILE:LINE:COL: message`, or `doc string line L, column C: message`) contains the text."},
		`^the ensemble is invalid with an error containing "(.*)"$`, func(s *Scenario) any { return s.thenInvalid }},
	{StepDoc{"Then", `Then agent "data_extractor" is a script agent`, "The agent's kind: script, LLM or ask."},
		`^agent "([^"]*)" is an? ([A-Za-z][A-Za-z0-9_-]*) agent$`, func(s *Scenario) any { return s.thenKind }},
}

// --- Given ---

// givenEnsemble names the ensemble file. It is loaded at once, but a load
// failure fails only the steps that need the ensemble: a later Given step
// may still fix it (a profiles file the ensemble's model_profile is in).
func (s *Scenario) givenEnsemble(path string) error {
	if err := s.setFile(path); err != nil {
		return err
	}
	return s.afterLoad()
}

func (s *Scenario) givenInlineEnsemble(ds *godog.DocString) error {
	if err := s.setInline(ds); err != nil {
		return err
	}
	return s.afterLoad()
}

// afterLoad loads the ensemble and checks the responses queued before it
// was named.
func (s *Scenario) afterLoad() error {
	if s.load() != nil {
		return nil
	}
	for _, name := range s.responses.Agents() {
		if _, err := s.agent(name); err != nil { // an agent, or an instance of a fan-out agent
			return fmt.Errorf("responses were given for agent %q, but %w", name, unknownAgent(s.ens, name))
		}
	}
	return s.checkSimulators(s.ens)
}

func (s *Scenario) givenProfiles(path string) error {
	p := s.Resolve(path)
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("the profiles file %s cannot be read: %v", quote(path), err)
	}
	s.profiles = append(s.profiles, p)
	if s.ensPath != "" || s.inline != nil {
		return s.afterLoad()
	}
	return nil
}

func (s *Scenario) givenInput(text string) error {
	text = unq(text)
	s.input = &text
	return nil
}

func (s *Scenario) givenInputDoc(ds *godog.DocString) error {
	if ds == nil {
		return errors.New("this step needs the input in a doc string below it")
	}
	return s.givenInput(ds.Content)
}

// checkAgentIfLoaded validates an agent name when the ensemble is known;
// otherwise `When the ensemble runs` checks it.
func (s *Scenario) checkAgentIfLoaded(name string) error {
	if s.ens == nil {
		return nil
	}
	_, err := s.agent(name)
	return err
}

// respondsTo is where the responses for agent go: a judge's replies
// (judge.go) for a judge's name, else the run's, once the name is checked.
func (s *Scenario) respondsTo(agent string) (*responses.Responses, error) {
	if r, ok := s.judgeReplies(agent); ok {
		return r, nil
	}
	if err := s.checkAgentIfLoaded(agent); err != nil {
		return nil, err
	}
	return s.responses, nil
}

func (s *Scenario) givenResponds(agent, reply string) error {
	reply = unq(reply)
	to, err := s.respondsTo(agent)
	if err != nil {
		return err
	}
	to.AddText(agent, reply)
	return nil
}

func (s *Scenario) givenRespondsDoc(agent string, ds *godog.DocString) error {
	to, err := s.respondsTo(agent)
	if err != nil {
		return err
	}
	v, isText, err := docValue(ds, true)
	if err != nil {
		return fmt.Errorf("agent %q responds: %w", agent, err)
	}
	switch str, isString := v.(string); {
	case isText:
		to.AddText(agent, str)
	case isString:
		// A JSON string is the output itself, but the responses take a
		// string as reply text, which is parsed: give it quoted.
		to.AddText(agent, jsonvalue.Compact(str))
	default:
		to.Add(agent, v)
	}
	return nil
}

func (s *Scenario) givenResponsesFile(path string) error {
	r, err := responses.LoadResponses(s.Resolve(path))
	if err != nil {
		var list *ensemble.ErrorList
		if errors.As(err, &list) {
			return fmt.Errorf("the responses file %s is invalid:\n  %s", quote(path), strings.ReplaceAll(list.Error(), "\n", "\n  "))
		}
		return fmt.Errorf("the responses file %s cannot be read: %v", quote(path), errors.Unwrap(err))
	}
	if s.ens != nil {
		if err := r.Validate(s.ens); err != nil {
			return fmt.Errorf("the responses file %s does not fit the ensemble %q:\n  %s", quote(path), s.ens.Name, strings.ReplaceAll(err.Error(), "\n", "\n  "))
		}
	}
	s.responses.Merge(r)
	s.respFile = path
	return nil
}

func (s *Scenario) givenSimulatedText(agent, profile, prompt string) error {
	return s.givenSimulated(agent, profile, unq(prompt))
}

func (s *Scenario) givenSimulated(agent, profile, prompt string) error {
	if err := s.checkAgentIfLoaded(agent); err != nil {
		return err
	}
	if s.ens != nil {
		if _, ok := s.ens.Models[profile]; !ok {
			return fmt.Errorf("agent %q is simulated by model profile %q, but the ensemble %q has no such profile", agent, profile, s.ens.Name)
		}
	}
	if strings.TrimSpace(prompt) == "" {
		return errors.New("the simulated user's prompt is empty")
	}
	s.responses.SetSimulate(agent, profile, prompt)
	return nil
}

func (s *Scenario) givenSimulatedDoc(agent, profile string, ds *godog.DocString) error {
	if ds == nil {
		return errors.New("this step needs the prompt in a doc string below it")
	}
	return s.givenSimulated(agent, profile, ds.Content)
}

func (s *Scenario) givenTurnLimit(n int) error {
	if n < 1 {
		return fmt.Errorf("the turn limit must be at least 1, got %d", n)
	}
	s.maxTurns = n
	return nil
}

func (s *Scenario) givenTimeout(d string) error {
	v, err := time.ParseDuration(d)
	if err != nil || v <= 0 {
		return fmt.Errorf("the timeout %s is not a positive duration (write it like 500ms, 5s or 2m)", quote(d))
	}
	s.timeout = v
	return nil
}

func (s *Scenario) givenStrict() error {
	s.strict = true
	return nil
}

func (s *Scenario) givenParallel(n int) error {
	if n < 1 {
		return fmt.Errorf("the parallel limit must be at least 1, got %d", n)
	}
	s.parallel = n
	return nil
}

// --- When ---

func (s *Scenario) whenRuns(ctx context.Context) error {
	if s.ran {
		return errors.New("the ensemble already ran in this scenario: start a new scenario for another run")
	}
	_, err := s.Run(ctx)
	return err
}

func (s *Scenario) whenValidated(path string) error {
	s.validated, s.validationErr = false, nil
	if err := s.setFile(path); err != nil {
		return err
	}
	s.validated = true
	s.validationErr = s.load()
	return nil
}

func (s *Scenario) whenInlineValidated(ds *godog.DocString) error {
	s.validated, s.validationErr = false, nil
	if err := s.setInline(ds); err != nil {
		return err
	}
	s.validated = true
	s.validationErr = s.load()
	return nil
}

// --- Then: the run ---

func (s *Scenario) thenReason(want string) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	switch want {
	case engine.Completed, engine.MaxTotalTurns, engine.Timeout, engine.Cancelled, engine.AwaitingInput, engine.BudgetExceeded,
		engine.ExpectationFailed, engine.StrictWarning:
	default:
		return fmt.Errorf("%q is not a completion reason: use completed, max_total_turns, timeout, cancelled, awaiting_input, budget_exceeded, expectation_failed or strict_warning", want)
	}
	if res.CompletionReason != want {
		return fmt.Errorf("completion reason is %q, want %q%s%s", res.CompletionReason, want, s.errorsNote(), s.expectationsNote())
	}
	s.expectedFailure = s.expectedFailure || want == engine.ExpectationFailed
	return nil
}

// errorsNote lists the run's errors, to explain an unexpected outcome.
func (s *Scenario) errorsNote() string {
	if s.result == nil || len(s.result.Errors) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nthe run's errors:")
	for _, e := range s.result.Errors {
		fmt.Fprintf(&b, "\n  turn %d, %s: %s", e.TurnNumber, e.AgentName, cut(e.Message, 400))
	}
	return b.String()
}

func (s *Scenario) thenExitCode(want int) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if got := res.ExitCode(); got != want {
		return fmt.Errorf("exit code is %d (completion reason %q), want %d%s%s", got, res.CompletionReason, want, s.errorsNote(), s.expectationsNote())
	}
	s.expectedFailure = s.expectedFailure || want == engine.ExitExpectation
	return nil
}

func (s *Scenario) thenRunFailed() error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if res.ExitCode() == 0 {
		return fmt.Errorf("the run succeeded (completion reason %q, exit code 0, no errors), want it to fail", res.CompletionReason)
	}
	return nil
}

func (s *Scenario) thenTurnCount(want int) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if res.TurnCount != want {
		return fmt.Errorf("turn count is %d, want %d (agents ran in order %s)", res.TurnCount, want, quote(strings.Join(order(res), ", ")))
	}
	return nil
}

func (s *Scenario) thenNoErrors() error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		return fmt.Errorf("the run has %s, want none:%s", report.Count(len(res.Errors), "error"), strings.TrimPrefix(s.errorsNote(), "\nthe run's errors:"))
	}
	return nil
}

func (s *Scenario) thenNoUnhandledErrors() error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	var unhandled []string
	for _, e := range res.Errors {
		if !e.Handled {
			unhandled = append(unhandled, fmt.Sprintf("turn %d, %s: %s", e.TurnNumber, e.AgentName, e.Message))
		}
	}
	if len(unhandled) > 0 {
		return fmt.Errorf("the run has %s, want none:\n  %s", report.Count(len(unhandled), "unhandled error"), strings.Join(unhandled, "\n  "))
	}
	return nil
}

func (s *Scenario) thenLoadWarning(sub string) error {
	sub = unq(sub)
	e, err := s.ensemble()
	if err != nil {
		return err
	}
	var msgs []string
	for _, w := range e.Warnings {
		if strings.Contains(w.Message, sub) {
			return nil
		}
		msgs = append(msgs, w.Error())
	}
	if len(msgs) == 0 {
		return fmt.Errorf("the ensemble has no warnings, want one containing %s", quote(sub))
	}
	return fmt.Errorf("no warning of the ensemble contains %s; its warnings:\n  %s", quote(sub), strings.Join(msgs, "\n  "))
}

func (s *Scenario) thenNoLoadWarnings() error {
	e, err := s.ensemble()
	if err != nil {
		return err
	}
	if len(e.Warnings) > 0 {
		msgs := make([]string, len(e.Warnings))
		for i, w := range e.Warnings {
			msgs[i] = w.Error()
		}
		return fmt.Errorf("the ensemble has %s, want none:\n  %s", report.Count(len(msgs), "warning"), strings.Join(msgs, "\n  "))
	}
	return nil
}

func (s *Scenario) thenErrorCount(want int) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if len(res.Errors) != want {
		return fmt.Errorf("the run has %s, want %d%s", report.Count(len(res.Errors), "error"), want, s.errorsNote())
	}
	return nil
}

func (s *Scenario) thenWarning(sub string) error {
	sub = unq(sub)
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	var msgs []string
	for _, w := range res.Warnings {
		msg := fmt.Sprintf("agent %s, dependency %s, expression %s: %s", w.AgentName, w.Dependency, quote(w.Expression), w.Message)
		if strings.Contains(msg, sub) {
			return nil
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return fmt.Errorf("the run has no warnings, want one containing %s", quote(sub))
	}
	return fmt.Errorf("no warning contains %s; the warnings:\n  %s", quote(sub), strings.Join(msgs, "\n  "))
}

// --- Then: agents ---

// order is the agents of the history, one per execution.
// order is the agents of the history's executions, in order: skipped
// agents did not run (docs/semantics.md#guards-that-skip).
func order(res *engine.Result) []string {
	names := make([]string, 0, len(res.ConversationHistory))
	for _, r := range res.ConversationHistory {
		if !r.Skipped {
			names = append(names, r.AgentName)
		}
	}
	return names
}

func (s *Scenario) executions(name string) (int, error) {
	if _, err := s.agent(name); err != nil {
		return 0, err
	}
	res, err := s.ranResult()
	if err != nil {
		return 0, err
	}
	if n, ok := s.instanceRuns(name); ok {
		return n, nil
	}
	if isPath(name) {
		return len(agentpath.PathRecords(res.ConversationHistory, name)), nil
	}
	return res.AgentExecutionCount[name], nil
}

func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return strconv.Itoa(n) + " times"
}

func (s *Scenario) thenRanTimes(name string, want int) error {
	got, err := s.executions(name)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("agent %q ran %s, want %s (agents ran in order %s)", name, times(got), times(want), quote(strings.Join(order(s.result), ", ")))
	}
	return nil
}

// thenPassMetric is the step of pass^k and pass@k in a run: a no-op, as
// the metric is of all the scenario's runs, which the run with repeats
// checks once they ended (checkMetrics).
func (s *Scenario) thenPassMetric(int, string) error { return nil }

func (s *Scenario) thenRanAtLeast(name string, want int) error {
	got, err := s.executions(name)
	if err != nil {
		return err
	}
	if got < want {
		return fmt.Errorf("agent %q ran %s, want at least %s", name, times(got), times(want))
	}
	return nil
}

func (s *Scenario) thenRanAtMost(name string, want int) error {
	got, err := s.executions(name)
	if err != nil {
		return err
	}
	if got > want {
		return fmt.Errorf("agent %q ran %s, want at most %s", name, times(got), times(want))
	}
	return nil
}

func (s *Scenario) thenDidNotRun(name string) error {
	got, err := s.executions(name)
	if err != nil {
		return err
	}
	if got != 0 {
		return fmt.Errorf("agent %q ran %s, want it not to run (agents ran in order %s)", name, times(got), quote(strings.Join(order(s.result), ", ")))
	}
	return nil
}

func (s *Scenario) thenRanBefore(first, second string) error {
	for _, n := range []string{first, second} {
		if _, err := s.executions(n); err != nil {
			return err
		}
	}
	names := order(s.result)
	i, j := slices.Index(names, first), slices.Index(names, second)
	switch {
	case i < 0:
		return fmt.Errorf("agent %q did not run (agents ran in order %s)", first, quote(strings.Join(names, ", ")))
	case j < 0:
		return fmt.Errorf("agent %q did not run (agents ran in order %s)", second, quote(strings.Join(names, ", ")))
	case i > j:
		return fmt.Errorf("agent %q first ran after agent %q: agents ran in order %s", first, second, quote(strings.Join(names, ", ")))
	}
	return nil
}

func (s *Scenario) thenOrder(list string) error {
	want := splitList(list)
	for _, n := range want {
		if _, err := s.agent(n); err != nil {
			return err
		}
	}
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	got := order(res)
	if !slices.Equal(got, want) {
		return fmt.Errorf("agents ran in order %s, want %s", quote(strings.Join(got, ", ")), quote(strings.Join(want, ", ")))
	}
	return nil
}

var historyColumns = []string{"turn", "agent", "execution", "status", "error", "output"}

func (s *Scenario) thenHistory(table *godog.Table) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if table == nil || len(table.Rows) == 0 {
		return errors.New("this step needs a table below it: a header row (turn, agent, execution, status, error, output) and one row per execution")
	}
	var cols []string
	for _, c := range table.Rows[0].Cells {
		name := strings.ToLower(strings.TrimSpace(c.Value))
		if !slices.Contains(historyColumns, name) {
			return fmt.Errorf("unknown history column %q: use %s", c.Value, strings.Join(historyColumns, ", "))
		}
		cols = append(cols, name)
	}
	cell := func(r *state.Record, col string) string {
		switch col {
		case "turn":
			return strconv.Itoa(r.TurnNumber)
		case "agent":
			return r.AgentName
		case "execution":
			return strconv.Itoa(r.Execution)
		case "status":
			if r.Skipped {
				return "skipped"
			}
			if r.Error != nil {
				return "failed"
			}
			return "ok"
		case "error":
			if r.Error != nil {
				return *r.Error
			}
			return ""
		case "output":
			if r.Error != nil {
				return ""
			}
			return text(r.OutputData)
		}
		return ""
	}
	actual := func() string {
		var b strings.Builder
		b.WriteString("the actual history:\n  | " + strings.Join(cols, " | ") + " |")
		for _, r := range res.ConversationHistory {
			vals := make([]string, len(cols))
			for i, c := range cols {
				vals[i] = tableCell(cut(cell(r, c), 60))
			}
			b.WriteString("\n  | " + strings.Join(vals, " | ") + " |")
		}
		return b.String()
	}
	want := table.Rows[1:]
	if len(want) != len(res.ConversationHistory) {
		return fmt.Errorf("the history has %s, want %d\n%s", report.Count(len(res.ConversationHistory), "execution"), len(want), actual())
	}
	for i, row := range want {
		r := res.ConversationHistory[i]
		for j, c := range row.Cells {
			if j >= len(cols) {
				break
			}
			w, g := strings.TrimSpace(c.Value), cell(r, cols[j])
			switch cols[j] {
			case "error", "output":
				if !strings.Contains(g, w) {
					return fmt.Errorf("history row %d: %s is %s, want it to contain %s\n%s", i+1, cols[j], quote(cut(g, 300)), quote(w), actual())
				}
			default:
				if w != "" && g != w {
					return fmt.Errorf("history row %d: %s is %s, want %s\n%s", i+1, cols[j], quote(g), quote(w), actual())
				}
			}
		}
	}
	return nil
}

// tableCell escapes a value for a Gherkin table cell.
func tableCell(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "|", `\|`).Replace(v)
}

// records are the agent's executions.
func (s *Scenario) records(name string) ([]*state.Record, error) {
	if _, err := s.executions(name); err != nil {
		return nil, err
	}
	if isPath(name) {
		return agentpath.PathRecords(s.result.ConversationHistory, name), nil
	}
	var out []*state.Record
	for _, r := range s.result.ConversationHistory {
		if r.AgentName == name && !r.Skipped {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *Scenario) thenSkipped(name string) error {
	if _, err := s.executions(name); err != nil {
		return err
	}
	for _, r := range s.result.ConversationHistory {
		if r.AgentName == name && r.Skipped {
			return nil
		}
	}
	return fmt.Errorf("agent %q was never skipped (agents ran in order %s)", name, quote(strings.Join(order(s.result), ", ")))
}

func (s *Scenario) thenFailedWith(name, sub string) error {
	sub = unq(sub)
	if _, err := s.executions(name); err != nil {
		return err
	}
	var msgs []string
	for _, e := range s.errorsOf(name) {
		if e.AgentName != name {
			continue
		}
		if strings.Contains(e.Message, sub) {
			return nil
		}
		msgs = append(msgs, fmt.Sprintf("turn %d: %s", e.TurnNumber, cut(e.Message, 400)))
	}
	if len(msgs) == 0 {
		n := s.result.AgentExecutionCount[name]
		if n == 0 {
			return fmt.Errorf("agent %q did not run, want it to fail with an error containing %s", name, quote(sub))
		}
		return fmt.Errorf("agent %q ran %s and never failed, want an error containing %s", name, times(n), quote(sub))
	}
	return fmt.Errorf("agent %q failed, but no error contains %s; its errors:\n  %s", name, quote(sub), strings.Join(msgs, "\n  "))
}

func (s *Scenario) thenDidNotFail(name string) error {
	if _, err := s.executions(name); err != nil {
		return err
	}
	for _, e := range s.errorsOf(name) {
		if e.AgentName == name {
			return fmt.Errorf("agent %q failed in turn %d: %s", name, e.TurnNumber, cut(e.Message, 400))
		}
	}
	return nil
}

// thenTookLessThan checks the execution_time of each of the agent's
// executions.
func (s *Scenario) thenTookLessThan(name string, secs float64) error {
	recs, err := s.records(name)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("agent %q did not run, want it to take less than %s", name, secondsText(secs))
	}
	for _, r := range recs {
		if r.ExecutionTime >= secs {
			return fmt.Errorf("agent %q took %.3f seconds in its execution %d (turn %d), want less than %s", name, r.ExecutionTime, r.Execution, r.TurnNumber, secondsText(secs))
		}
	}
	return nil
}

// secondsText says a number of seconds as the step gave it.
func secondsText(v float64) string {
	if v == 1 {
		return "1 second"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " seconds"
}

// latestOutput is the agent's latest successful output.
func (s *Scenario) latestOutput(name string) (any, error) {
	recs, err := s.records(name)
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Error == nil {
			return recs[i].OutputData, nil
		}
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("agent %q did not run, so it has no output (agents ran in order %s)", name, quote(strings.Join(order(s.result), ", ")))
	}
	return nil, fmt.Errorf("agent %q produced no output: its %s failed, the last with: %s", name, times(len(recs)), cut(*recs[len(recs)-1].Error, 400))
}

func (s *Scenario) thenOutputContains(name, sub string) error {
	sub = unq(sub)
	out, err := s.latestOutput(name)
	if err != nil {
		return err
	}
	if !strings.Contains(text(out), sub) {
		return fmt.Errorf("output of agent %q is %s, want it to contain %s", name, show(out), quote(sub))
	}
	return nil
}

func (s *Scenario) thenOutputNotContains(name, sub string) error {
	sub = unq(sub)
	out, err := s.latestOutput(name)
	if err != nil {
		return err
	}
	if strings.Contains(text(out), sub) {
		return fmt.Errorf("output of agent %q is %s, want it not to contain %s", name, show(out), quote(sub))
	}
	return nil
}

func (s *Scenario) thenOutputIs(name, want string) error {
	want = unq(want)
	out, err := s.latestOutput(name)
	if err != nil {
		return err
	}
	if text(out) != want {
		return fmt.Errorf("output of agent %q is %s, want %s", name, show(out), quote(want))
	}
	return nil
}

func (s *Scenario) thenOutputIsDoc(name string, ds *godog.DocString) error {
	want, isText, err := docValue(ds, true)
	if err != nil {
		return err
	}
	out, err := s.latestOutput(name)
	if err != nil {
		return err
	}
	if isText {
		if strings.TrimSpace(text(out)) != strings.TrimSpace(want.(string)) {
			return fmt.Errorf("output of agent %q is %s, want %s", name, show(out), show(want))
		}
		return nil
	}
	if !equalValues(out, want) {
		return fmt.Errorf("output of agent %q is %s, want %s", name, show(out), show(want))
	}
	return nil
}

func (s *Scenario) thenInputContains(name, sub string) error {
	sub = unq(sub)
	recs, err := s.records(name)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("agent %q did not run, so it was given nothing", name)
	}
	in := state.ResolveInput(s.result.ConversationHistory, recs[len(recs)-1].InputData)
	if !strings.Contains(text(in), sub) {
		return fmt.Errorf("input of agent %q (execution %d) is %s, want it to contain %s", name, recs[len(recs)-1].Execution, show(in), quote(sub))
	}
	return nil
}

func (s *Scenario) thenFinalStateIs(key string, ds *godog.DocString) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	want, _, err := docValue(ds, false)
	if err != nil {
		return err
	}
	got, ok := res.FinalState[key]
	if !ok {
		return fmt.Errorf("final state has no %q (its keys: %s), want %s", key, strings.Join(slices.Sorted(maps.Keys(res.FinalState)), ", "), show(want))
	}
	if !equalValues(got, want) {
		return fmt.Errorf("final state of %q is %s, want %s", key, show(got), show(want))
	}
	return nil
}

func (s *Scenario) thenFinalStateHasNo(key string) error {
	res, err := s.ranResult()
	if err != nil {
		return err
	}
	if v, ok := res.FinalState[key]; ok {
		return fmt.Errorf("final state of %q is %s, want no such key", key, show(v))
	}
	return nil
}

// Eval evaluates a condition against the final state of the run.
func (s *Scenario) Eval(src string) (bool, error) {
	prog, err := conditions.Compile(src)
	if err != nil {
		return false, fmt.Errorf("the expression %s is invalid: %v", quote(src), err)
	}
	res, err := s.ranResult()
	if err != nil {
		return false, err
	}
	st := state.Restore(state.Contents{History: res.ConversationHistory})
	v, err := prog.Eval(&conditions.Env{
		Context:    res.FinalState,
		TurnCount:  res.TurnCount,
		Executions: res.AgentExecutionCount,
		History:    st.HistoryValues(),
		Input:      res.Input,
	})
	if err != nil {
		// The expression may put a key back together from outputs that
		// each hold a part of it: its error is redacted as the run's are.
		lookup := s.opts.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		err = secrets.Of(s.ens.Models, lookup).Error(err)
		return false, fmt.Errorf("the expression %s failed: %v", quote(src), err)
	}
	return v, nil
}

func (s *Scenario) thenExpr(src string, want bool) error {
	src = unq(src)
	got, err := s.Eval(src)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("the expression %s is %t, want %t (final state: %s; executions: %s; turn_count: %d)",
			quote(src), got, want, cut(jsonvalue.Compact(s.result.FinalState), 600), jsonvalue.Compact(s.result.AgentExecutionCount), s.result.TurnCount)
	}
	return nil
}

// unq reads a quoted argument: \" is a quote.
func unq(s string) string { return strings.ReplaceAll(s, `\"`, `"`) }

func (s *Scenario) thenExprTrue(src string) error  { return s.thenExpr(src, true) }
func (s *Scenario) thenExprFalse(src string) error { return s.thenExpr(src, false) }

// --- Then: validation ---

func (s *Scenario) validation() error {
	if !s.validated {
		return errors.New(`nothing was validated: add When the ensemble "path" is validated before this step`)
	}
	return nil
}

func (s *Scenario) thenValid() error {
	if err := s.validation(); err != nil {
		return err
	}
	if s.validationErr != nil {
		return fmt.Errorf("want a valid ensemble, but %v", s.validationErr)
	}
	return nil
}

func (s *Scenario) thenInvalid(sub string) error {
	sub = unq(sub)
	if err := s.validation(); err != nil {
		return err
	}
	if s.validationErr == nil {
		return fmt.Errorf("the ensemble %s is valid, want it rejected with an error containing %s", s.ensLabel, quote(sub))
	}
	for _, p := range s.validationErr.problems {
		if strings.Contains(p, sub) {
			return nil
		}
	}
	return fmt.Errorf("no problem contains %s; the problems:\n  %s", quote(sub), strings.Join(s.validationErr.problems, "\n  "))
}

func (s *Scenario) thenKind(name, kind string) error {
	if s.validated && s.validationErr != nil {
		return fmt.Errorf("cannot check agent %q: %v", name, s.validationErr)
	}
	a, err := s.agent(name)
	if err != nil {
		return err
	}
	// Kinds are named in lower case ("llm"); prose may write "LLM".
	if a.Kind == nil || !strings.EqualFold(a.Kind.String(), kind) {
		return fmt.Errorf("agent %q is a %s agent, want a %s agent", name, a.Kind, kind)
	}
	return nil
}
