Feature: Broken

  Scenario: Not gherkin
    Given the ensemble "../ensemble.yaml"
  This line is not a step
    """
