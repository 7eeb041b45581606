Feature: Failing agents are recorded and the rest go on
  A failed execution counts as an execution, is recorded in the history
  with its error and produces no output; agents that do not depend on it
  still run, and the run ends completed with exit code 1.

  Scenario: Script and LLM agents fail in every way in one turn
    Given the ensemble "failures/ensemble.yaml"
    And the model fails with status 404 "The model fake-model does not exist" for system prompts containing "unreachable one"
    And the model replies "Sure! Here is my answer: it went fine." to system prompts containing "rambling one"
    When the ensemble runs
    Then the completion reason is "completed"
    And the exit code is 1
    And the run has 4 errors
    And the conversation history is:
      | turn | agent           | status | error                                  | output                |
      | 1    | source          | ok     |                                        | "ok":"source"         |
      | 2    | crashing_script | failed | script exited with code 3: writing the report...\ndisk full |  |
      | 2    | refusing_script | failed | quota exceeded for today               |                       |
      | 2    | unreachable_llm | failed | The model fake-model does not exist    |                       |
      | 2    | rambling_llm    | failed | the reply is not valid JSON            |                       |
      | 2    | survivor        | ok     |                                        | "ok":"survivor"       |
      | 3    | summary         | ok     |                                        | "ok":"summary","turn":3 |
    And agent "crashing_script" failed with an error containing "disk full"
    And agent "unreachable_llm" failed with an error containing "404"
    And agent "after_crash" did not run
    And agent "after_llm" did not run
    And agent "survivor" did not fail
    And the final state has no "crashing_script"
    And the final state has no "unreachable_llm"
    And the expression "executions.crashing_script == 1 && len(filter(history, .error != nil)) == 4" is true

  Scenario: Injected responses stand in for failing agents; a reply that is not JSON still fails
    Given the ensemble "failures/ensemble.yaml"
    And agent "crashing_script" responds "{\"ok\": \"injected\"}"
    And agent "refusing_script" responds "{\"ok\": \"injected\"}"
    And agent "unreachable_llm" responds "fine"
    And agent "rambling_llm" responds "not json at all"
    And agent "survivor" responds "[]"
    When the ensemble runs
    Then agent "rambling_llm" failed with an error containing "output_format is json"
    And agent "after_crash" ran 1 time
    And agent "after_llm" ran 1 time
    And the run has 1 error
    And the output of agent "survivor" is "[]"
    And the model was called 0 times
