Feature: Bad input fails only its own scenario

  Scenario: A missing ensemble
    Given the ensemble "../missing.yaml"
    When the ensemble runs

  Scenario: An unknown agent
    Given the ensemble "../ensemble.yaml"
    And agent "critick" responds "{\"approved\": true}"
    When the ensemble runs

  Scenario: A malformed doc string
    Given the ensemble "../ensemble.yaml"
    And agent "critic" responds:
      """
      {"approved": tru
      """
    When the ensemble runs

  Scenario: An invalid expression
    Given the ensemble "../ensemble.yaml"
    And agent "critic" responds "{\"approved\": true}"
    When the ensemble runs
    Then the expression "context.critic.approved ===" is true

  Scenario: A good one among them
    Given the ensemble "../ensemble.yaml"
    And agent "critic" responds "{\"approved\": true}"
    When the ensemble runs
    Then agent "signoff" ran 1 time
