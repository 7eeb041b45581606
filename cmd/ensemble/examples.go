package main

import "github.com/spf13/cobra"

// commandExamples are the Examples of --help, by command (its path under
// the root): real command lines, each with what it does, starting with
// the program's name; a test parses each line as the command it names
// would.
var commandExamples = map[string]string{
	"": `  ensemble init my-ensemble && cd my-ensemble
  ensemble run ensemble.yaml --responses responses.yaml
  ensemble validate .`,
	"run": `  # On a terminal: live progress, then a summary
  ensemble run ensemble.yaml --input "Sales figures for Q4"

  # The input from standard input; the result as JSON
  echo "Sales figures for Q4" | ensemble run ensemble.yaml --input - --output json

  # Injected responses: no model, no human (tests, CI)
  ensemble run ensemble.yaml --responses responses.yaml

  # A durable run, to continue with resume after Ctrl-C or a limit
  ensemble run ensemble.yaml --state runs.db --run-id nightly

  # Record the models' replies once, then replay them offline
  ensemble run ensemble.yaml --record recording/
  ensemble run ensemble.yaml --replay recording/`,
	"import": `  ensemble import llm-orc ~/my-llm-orc-project --out imported`,
	"import llm-orc": `  # Convert the project in the current folder, then check the result
  ensemble import llm-orc . --out imported
  ensemble validate imported`,
	"resume": `  # The one unfinished run of a state database
  ensemble resume runs.db

  # A run of a database holding several, past the limit that stopped it
  ensemble resume runs.db --run-id nightly --max-turns 40

  # A run that waits for input (exit 5)
  ensemble resume runs.db --answer approver='{"approved": true}'

  # Fork: a new run whose first 2 turns are run nightly's, then new responses
  ensemble resume runs.db --run-id nightly --from-turn 2 --responses other.yaml`,
	"batch": `  # One run per line of inputs.jsonl, 4 at a time, one result line each
  ensemble batch ensemble.yaml --inputs inputs.jsonl --out results.jsonl

  # Durable: save every run, then finish what an interrupted batch left
  ensemble batch ensemble.yaml --inputs inputs.jsonl --out results.jsonl --state runs.db
  ensemble batch --resume runs.db`,
	"state": `  ensemble state list runs.db
  ensemble state show runs.db --run-id nightly`,
	"state show": `  # The result of the run, as the run printed it
  ensemble state show runs.db --run-id nightly --output text

  # A run on Temporal, by its id
  ensemble state show --temporal localhost:7233 nightly`,
	"ui": `  # Look at the runs of a state database in the browser
  ensemble run ensemble.yaml --state runs.db
  ensemble ui runs.db --open

  # On a fixed port, two databases
  ensemble ui runs.db batch.db --port 8080`,
	"state export": `  ensemble state export runs.db --run-id nightly > run.json`,
	"state list": `  ensemble state list runs.db
  ensemble state list runs.db --output json`,
	"validate": `  ensemble validate ensemble.yaml other.yaml

  # Every ensemble file under a folder, warnings counted as errors
  ensemble validate --strict examples/

  # From standard input, problems as JSON
  cat ensemble.yaml | ensemble validate --output json -`,
	"graph": `  ensemble graph ensemble.yaml > graph.mmd
  ensemble graph ensemble.yaml --format dot | dot -Tsvg > graph.svg`,
	"schema":  `  ensemble schema > ensemble.schema.json`,
	"version": `  ensemble version`,
	"test": `  # Every .feature file under the current folder
  ensemble test

  # The scenario at line 12, then the @smoke ones, with a JUnit report
  ensemble test features/checkout.feature:12
  ensemble test --tags "@smoke && ~@slow" --format pretty,junit:report.xml features/

  # Live models: each scenario up to 20 times, passing when 80% of its runs do
  ensemble test --live-all --repeat 20 --pass-rate 0.8 features/live/`,
	"test capture": `  # A saved run becomes a test that replays it offline
  ensemble run ensemble.yaml --state runs.db
  ensemble test capture runs.db --out captured
  ensemble test captured

  # One run of several, over an earlier capture
  ensemble test capture runs.db --run-id nightly --out captured --force`,
	"test calibrate": `  # Judge steps' verdicts saved, labelled in ui, then each judge against the labels
  ensemble test features/ --state tests.db
  ensemble ui tests.db
  ensemble test calibrate tests.db

  # One test run, as JSON
  ensemble test calibrate tests.db --test-run 20261206-225946-87619d --output json`,
	"init": `  ensemble init my-ensemble
  cd my-ensemble && ensemble run ensemble.yaml --responses responses.yaml`,
	"mcp": `  ensemble mcp serve ./ensembles`,
	"mcp serve": `  # For an MCP client, which starts this command
  ensemble mcp serve ./ensembles

  # Every ensemble with the responses.yaml beside it: no model needed
  ensemble mcp serve examples --responses

  # Every call a run saved in mcp.db: ask agents ask the client, or wait
  ensemble mcp serve ./ensembles --state mcp.db`,
	"serve": `  # Every ensemble of a folder, on 127.0.0.1:7777, runs saved in ensemble-serve.db
  ensemble serve ./ensembles

  # The examples with their injected responses, on another port and database
  ensemble serve examples --responses --listen 127.0.0.1:8080 --state runs.db

  # Reachable from other machines: a token is required
  ensemble serve ./ensembles --listen 0.0.0.0:7777 --token-file token.txt --allow-host ensembles.internal --max-runs 16

  # Every run a workflow of a Temporal cluster, played by its workers
  ensemble serve ./ensembles --temporal localhost:7233`,
	"worker": `  ensemble worker --temporal localhost:7233
  ensemble worker --temporal localhost:7233 --namespace prod --task-queue ensemble`,
	"answer":     `  ensemble answer --temporal localhost:7233 nightly approver '{"approved": true}'`,
	"completion": `  ensemble completion bash > ~/.local/share/bash-completion/completions/ensemble`,
}

// addExamples sets the Examples of root and of every command under it
// that commandExamples has.
func addExamples(c *cobra.Command, path string) {
	if ex, ok := commandExamples[path]; ok {
		c.Example = ex
	}
	for _, sub := range c.Commands() {
		p := sub.Name()
		if path != "" {
			p = path + " " + p
		}
		addExamples(sub, p)
	}
}
