Feature: Undefined

  Scenario: A step that is not built in
    Given the ensemble "../ensemble.yaml"
    When the ensemble run
