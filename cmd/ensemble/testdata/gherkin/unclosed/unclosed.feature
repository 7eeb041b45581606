Feature: unclosed
  Scenario: a doc string never closed
    Given the input
      """
      text
