Feature: Approval that waits for a person
  The approver has ask_mode: suspend: the run ends waiting for its answer
  (exit code 5), and the answer given later resumes it.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: The run waits for the approver, and the answer resumes it
    When the ensemble runs
    Then the run is waiting for input from "approver"
    And the exit code is 5
    And agent "writer" ran 1 time
    And agent "publisher" did not run
    When "approver" answers "{\"approved\": true}"
    Then the completion reason is "completed"
    And the exit code is 0
    And the agents ran in this order: "writer, approver, publisher"
    And the output of agent "publisher" is "published: Ensemble 1.1: ask agents that wait"
    And the input of agent "approver" contains "answered_on_resume"

  Scenario: A rejected draft is not published
    When the ensemble runs
    And "approver" answers:
      """
      {"approved": false, "why": "say what changed"}
      """
    Then the completion reason is "completed"
    And the output of agent "approver" contains "say what changed"
    And agent "publisher" did not run

  Scenario: An injected answer never waits
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    And agent "publisher" ran 1 time
