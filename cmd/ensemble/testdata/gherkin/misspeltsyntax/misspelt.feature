Feature: A misspelt Scenario

  Scenario: The greeting runs
    Given the ensemble "../ensemble.yaml"
    When the ensemble runs

  Scenaro: The greeting runs again
    When the ensemble runs
