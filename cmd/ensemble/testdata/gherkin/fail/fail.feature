Feature: Failing

  Scenario: The order is not what the feature says
    Given the ensemble "../ensemble.yaml"
    And agent "critic" responds "{\"approved\": true}"
    When the ensemble runs
    Then the agents ran in this order: "greeter, signoff, critic"
