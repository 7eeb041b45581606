Feature: A reviewer answered by a simulator

  Scenario: The reviewer rejects the first draft and approves the second
    Given the ensemble "review.yaml"
    And ask agent "reviewer" is answered by the simulator "reject then approve"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "brief, writer, reviewer, writer, reviewer, publisher"
    And agent "reviewer" ran 2 times
    And the output of agent "reviewer" is "approve"
    And the output of agent "publisher" is "published"
    And the run made at most 0 model requests
    And the simulated people made 0 model requests

  Scenario: JSON answers
    Given the ensemble "review.yaml"
    And ask agent "reviewer" is answered by the simulator "{\"approved\": false} then {\"approved\": false} then {\"approved\": true}"
    When the ensemble runs
    Then the completion reason is "completed"
    And agent "reviewer" ran 3 times
    And agent "publisher" ran 1 time

  Scenario: A reviewer who always rejects keeps the loop going to the turn limit
    Given the ensemble "review.yaml"
    And ask agent "reviewer" is answered by the simulator "always reject"
    And the turn limit is 6
    When the ensemble runs
    Then the completion reason is "max_total_turns"
    And agent "reviewer" ran 2 times
    And agent "publisher" did not run
