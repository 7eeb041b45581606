package bdd

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
	{StepDoc{"Then", `Then the ensemble is invalid with an error containing "mutually exclusive"`, "After a validated step: loading failed, and one of its problems (`FILE:LINE:COL: message`, or for a doc string `FEATURE:LINE: doc string line L, column C: message`) contains the text."},
		`^the ensemble is invalid with an error containing "(.*)"$`, func(s *Scenario) any { return s.thenInvalid }},
	{StepDoc{"Then", `Then agent "data_extractor" is a script agent`, "The agent's kind: script, LLM or ask."},
		`^agent "([^"]*)" is an? ([A-Za-z][A-Za-z0-9_-]*) agent$`, func(s *Scenario) any { return s.thenKind }},
}
