Feature: A misspelt Background
  Note: its steps are read as this description, and never run.

  Backgroud:
    Given the ensemble "../ensemble.yaml"

  Scenario: The greeting runs
    When the ensemble runs
