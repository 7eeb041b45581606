Feature: Conditional dependencies decide which agents run
  Every desk depends on triage, but only the one whose condition holds
  against triage's output runs; the survey follows whichever desk ran.

  Background:
    Given the ensemble "router/ensemble.yaml"
    And agent "tech_desk" responds "Restart it."

  Scenario Outline: A "<category>" ticket goes to <desk> only
    Given the input "<ticket>"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the output of agent "triage" contains "\"category\":\"<category>\""
    And the agents ran in this order: "triage, <desk>, survey"
    And agent "<desk>" ran 1 time
    And agent "<skipped1>" did not run
    And agent "<skipped2>" did not run
    And the output of agent "survey" contains "\"from\":[\"<desk>\"]"

    Examples:
      | ticket                      | category  | desk          | skipped1      | skipped2      |
      | My invoice is wrong         | billing   | billing_desk  | tech_desk     | fallback_desk |
      | The app crashes on start    | technical | tech_desk     | billing_desk  | fallback_desk |
      | Do you ship to Mars?        | other     | fallback_desk | billing_desk  | tech_desk     |

  Scenario: A condition that does not hold keeps the output from the agent
    Given the input "refund please"
    When the ensemble runs
    Then the expression "executions.tech_desk == 0 && executions.fallback_desk == 0" is true
    And the final state has no "tech_desk"
    And the turn count is 3
