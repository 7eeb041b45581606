Feature: Tools of an MCP server
  The glossary server starts with each run and its tools are checked against
  the agent's; the model's reply is injected, the publishing script is real.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: The explainer's answer is published
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "explainer, publish"
    And the output of agent "publish" is "**quorum**: The smallest number of replicas that must agree for a decision to count."
