Feature: Passing

  Background:
    Given the ensemble "../ensemble.yaml"

  @smoke
  Scenario: An approved greeting is signed off
    Given agent "critic" responds "{\"approved\": true}"
    When the ensemble runs
    Then the completion reason is "completed"
    And the agents ran in this order: "greeter, critic, signoff"
    And the output of agent "signoff" is "signed: hello world"

  Scenario: A rejected greeting is not
    Given the input "moon"
    And agent "critic" responds:
      """
      {"approved": false}
      """
    When the ensemble runs
    Then agent "signoff" did not run
    And the output of agent "greeter" contains "hello moon"
