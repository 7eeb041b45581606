Feature: A scenario may ask for the failed verdict

  Scenario: The reviewers say no, and the test says so
    Given the ensemble "review.yaml"
    And the responses file "reject.yaml"
    When the ensemble runs
    Then the completion reason is "expectation_failed"
    And the exit code is 8

  Scenario: The reviewers say yes
    Given the ensemble "review.yaml"
    And the responses file "approve.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
