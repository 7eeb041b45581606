Feature: Routing by topic
  The classifier's reply is injected; dispatch runs the child ensemble of its
  topic, and the child's agents are answered by path.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: A billing question goes to the billing ensemble
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the run has no errors
    And the output of agent "route" contains "reversed within five days"
    And the expression "history[1].child.ensemble == 'billing'" is true

  Scenario Outline: Each topic has its ensemble, and anything else the general one
    Given agent "classifier" responds "{\"topic\": \"<topic>\"}"
    And agent "route/specialist" responds "..."
    And agent "route/answer" responds "ok"
    When the ensemble runs
    Then the run has no errors
    And the expression "history[1].child.ensemble == '<child>'" is true

    Examples:
      | topic     | child     |
      | billing   | billing   |
      | technical | technical |
      | weather   | general   |
