Feature: A runaway loop
  ping and pong answer each other forever; only max_total_turns stops them.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: The file's turn limit stops the loop
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the completion reason is "max_total_turns"
    And the exit code is 3
    And the run failed
    And the run has no errors
    And the turn count is 7
    And the agents ran in this order: "topic, ping, pong, ping, pong, ping, pong"
    And agent "ping" ran 3 times
    And agent "pong" ran 3 times
    And the output of agent "pong" is:
      """
      {"by": "pong", "volley": 7}
      """

  Scenario: A lower limit from the test stops it sooner
    Given agent "topic" responds "tabs versus spaces"
    And the turn limit is 4
    When the ensemble runs
    Then the completion reason is "max_total_turns"
    And the turn count is 4
    And the agents ran in this order: "topic, ping, pong, ping"
    And the expression "executions.ping == 2 && executions.pong == 1" is true

  Scenario: Without an injected topic the run waits for the human's answer
    When the ensemble runs
    Then the run is waiting for input from "topic"
    And agent "ping" did not run
    And the exit code is 5
