Feature: A guarded join
  The router decides which branch runs: the other branch's when: is false,
  so it is skipped, and the summary joins with null in its place.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: A bug report goes to the bug branch
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "router, bugfix, summary"
    And agent "feature" was skipped
    And agent "feature" did not run
    And the output of agent "summary" is:
      """
      {"tickets": ["bugfix: the login page crashes on submit"], "skipped": ["feature"]}
      """

  Scenario: A feature request goes to the feature branch
    Given the input "feature: dark mode"
    When the ensemble runs
    Then the agents ran in this order: "router, feature, summary"
    And agent "bugfix" was skipped
    And the output of agent "summary" is:
      """
      {"tickets": ["feature: dark mode"], "skipped": ["bugfix"]}
      """

  Scenario: Both branches skipped: the join is skipped too
    Given the input "hello"
    When the ensemble runs
    Then the completion reason is "completed"
    And the exit code is 0
    And the agents ran in this order: "router"
    And agent "summary" was skipped
    And the conversation history is:
      | turn | agent   | status  |
      | 1    | router  | ok      |
      | 2    | bugfix  | skipped |
      | 2    | feature | skipped |
      | 3    | summary | skipped |
