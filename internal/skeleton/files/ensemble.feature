Feature: The starter ensemble
  The script runs for real; the model's reply comes from responses.yaml.
  List the steps you can use with: ensemble test --list-steps

  Background:
    Given the ensemble "ensemble.yaml"
    And the responses file "responses.yaml"

  Scenario: The summary is written from the gathered facts
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "gather, summary"
    And the input of agent "summary" contains "billing"
    And the output of agent "summary" contains "two are solved"
