Feature: The file's expect: holds in its tests

  Scenario: The reviewers say no
    Given the ensemble "review.yaml"
    And the responses file "reject.yaml"
    When the ensemble runs
    Then agent "judge" ran 1 time
