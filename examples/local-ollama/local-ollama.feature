Feature: A local model checked by a script
  The model's replies are injected (no Ollama needed); the catalog and the
  checker are real scripts that read the same stock data as the tool.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: A wrong first answer is sent back once and corrected
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "catalog, inventory_assistant, checker, inventory_assistant, checker"
    And agent "inventory_assistant" ran 2 times
    And the input of agent "inventory_assistant" contains "Call stock_level for every warehouse"
    And the output of agent "inventory_assistant" is:
      """
      {"warehouse": "south", "count": 40, "summary": "South has the most blue widgets: 40."}
      """
    And the output of agent "checker" is:
      """
      {"ok": true}
      """

  Scenario: The recorded model answers, offline
    The folder recording/ was made with ensemble run --record against a
    model: its exchanges are replayed, and the tool runs for real.
    Given the recording "recording"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And agent "inventory_assistant" ran 2 times
    And the output of agent "inventory_assistant" is:
      """
      {"warehouse": "south", "count": 40, "summary": "South has the most blue widgets: 40."}
      """

  Scenario: A request the recording lacks fails with the difference
    Given the recording "recording"
    And the input "Which warehouse has the most red widgets?"
    When the ensemble runs
    Then agent "inventory_assistant" failed with an error containing "message 1 (user) differs"
    And agent "inventory_assistant" failed with an error containing "+ Which warehouse has the most red widgets?"

  Scenario: A right first answer is accepted at once
    Given agent "inventory_assistant" responds:
      """
      {"warehouse": "south", "count": 40, "summary": "South: 40."}
      """
    When the ensemble runs
    Then the agents ran in this order: "catalog, inventory_assistant, checker"
    And the expression "context.checker.ok" is true

  Scenario: Two wrong answers: the assistant's max_turns ends the loop
    Given agent "inventory_assistant" responds "{\"warehouse\": \"north\", \"count\": 12}"
    And agent "inventory_assistant" responds "{\"warehouse\": \"east\", \"count\": 3}"
    When the ensemble runs
    Then the completion reason is "completed"
    And agent "inventory_assistant" ran 2 times
    And agent "checker" ran 2 times
    And the output of agent "checker" contains "Wrong: you said 'east' with 3"

  Scenario: A reply that is not JSON fails the execution
    Given agent "inventory_assistant" responds "South has 40, I think."
    When the ensemble runs
    Then agent "inventory_assistant" failed with an error containing "output_format is json"
    And agent "checker" did not run
    And the exit code is 1
