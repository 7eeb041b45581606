Feature: Conversation state persists across turns
  The accumulated context, the execution counts and the history carry from
  one turn to the next, exactly.

  Background:
    Given the ensemble "counter/ensemble.yaml"

  Scenario: A counter passed through the context counts every execution
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the turn count is 7
    And agent "seed" ran 1 time
    And agent "tick" ran 3 times
    And agent "tock" ran 3 times
    And the conversation history is:
      | turn | agent | execution | status | output                                                  |
      | 1    | seed  | 1         | ok     | {"by":"seed","execution":1,"turn":1,"value":10}          |
      | 2    | tick  | 1         | ok     | {"by":"tick","execution":1,"turn":2,"value":11}          |
      | 3    | tock  | 1         | ok     | {"by":"tock","execution":1,"turn":3,"value":12}          |
      | 4    | tick  | 2         | ok     | {"by":"tick","execution":2,"turn":4,"value":13}          |
      | 5    | tock  | 2         | ok     | {"by":"tock","execution":2,"turn":5,"value":14}          |
      | 6    | tick  | 3         | ok     | {"by":"tick","execution":3,"turn":6,"value":15}          |
      | 7    | tock  | 3         | ok     | {"by":"tock","execution":3,"turn":7,"value":16}          |
    And the final state of "tock" is:
      """
      {"value": 16, "by": "tock", "turn": 7, "execution": 3}
      """
    And the final state of "tick" is:
      """
      {"value": 15, "by": "tick", "turn": 6, "execution": 3}
      """
    And the expression "len(history) == 7 && executions.seed == 1 && executions.tick == 3 && executions.tock == 3" is true
    And the expression "all(history, .error == nil) && history[6].agent_name == \"tock\" && history[6].turn_number == 7" is true
    And the expression "map(filter(history, .agent_name == \"tick\"), .execution) == [1, 2, 3]" is true

  Scenario: Injected and real executions share one count and one history
    Given agent "tick" responds "{\"value\": 100}"
    And agent "tick" responds "{\"value\": 200}"
    When the ensemble runs
    Then agent "tick" failed with an error containing "injected responses exhausted after 2"
    And the agents ran in this order: "seed, tick, tock, tick, tock, tick"
    And agent "tick" ran 3 times
    And the output of agent "tock" contains "\"value\":201"
    And the conversation history is:
      | turn | agent | execution | status | output        |
      | 1    | seed  | 1         | ok     | "value":10    |
      | 2    | tick  | 1         | ok     | {"value":100} |
      | 3    | tock  | 1         | ok     | "value":101   |
      | 4    | tick  | 2         | ok     | {"value":200} |
      | 5    | tock  | 2         | ok     | "value":201   |
      | 6    | tick  | 3         | failed |               |
