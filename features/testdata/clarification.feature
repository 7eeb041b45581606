Feature: An LLM agent asks the user for clarification
  The analyzer's needs_clarification output triggers the user-input agent;
  an injected answer plays the user, and the analyzer continues its own
  conversation with the clarification before the report is written.

  Background:
    Given the ensemble "analysis/ensemble.yaml"
    And the model replies "{\"needs_clarification\": true, \"question\": \"Which region should I focus on?\"}" to system prompts containing "sales analyst"
    And the model replies "{\"needs_clarification\": false, \"analysis\": \"EMEA: 1.24M in Q3\"}" to system prompts containing "sales analyst"
    And the model replies "EMEA made 1.24M in Q3." to system prompts containing "report writer"

  Scenario: The injected answer reaches the analyzer, which then concludes
    Given agent "user_clarification" responds "Q3 only, EMEA region"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "data_extractor, llm_analyzer, user_clarification, llm_analyzer, final_synthesis"
    And the turn count is 5
    And agent "llm_analyzer" ran 2 times
    And agent "user_clarification" ran 1 time
    And the input of agent "user_clarification" contains "Which region should I focus on?"
    And the output of agent "user_clarification" is "Q3 only, EMEA region"
    # The analyzer's second request continues its conversation: the system
    # prompt, its first exchange, then only what is new: the clarification.
    And model request 2 for system prompts containing "sales analyst" has the roles "system, user, assistant, user"
    And model request 2 for system prompts containing "sales analyst" ends with a user message containing "Output of user_clarification:\nQ3 only, EMEA region"
    And the expression "context.llm_analyzer.analysis == \"EMEA: 1.24M in Q3\"" is true
    And the output of agent "final_synthesis" is "EMEA made 1.24M in Q3."

  Scenario: Without an injected answer the run waits for the user and nothing is concluded
    When the ensemble runs
    Then the run is waiting for input from "user_clarification"
    And agent "llm_analyzer" ran 1 time
    And agent "final_synthesis" did not run
    And the exit code is 5
