Feature: Script agents pass structured data to LLM agents
  The extractor's JSON output reaches the model as context, labelled with
  the extractor's name, and the model's JSON reply is stored as data that
  conditions can read.

  Background:
    Given the ensemble "analysis/ensemble.yaml"

  Scenario: The model receives the extracted rows and its JSON reply routes the run
    Given the model replies "{\"needs_clarification\": false, \"analysis\": \"AMER leads with 2.31M\"}" to system prompts containing "sales analyst"
    And the model replies "AMER led Q3 with 2.31M of 4.42M." to system prompts containing "report writer"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "data_extractor, llm_analyzer, final_synthesis"
    And agent "user_clarification" did not run
    And the final state of "data_extractor" is:
      """
      {"rows": [{"region": "EMEA", "revenue": 1240000},
                {"region": "AMER", "revenue": 2310000},
                {"region": "APAC", "revenue": 870000}],
       "total": 4420000}
      """
    And model request 1 for system prompts containing "sales analyst" has the roles "system, user"
    And model request 1 for system prompts containing "sales analyst" ends with a user message containing "Input:\nSales figures for Q3\n\nOutput of data_extractor:\n{\"rows\":[{\"region\":\"EMEA\",\"revenue\":1240000},{\"region\":\"AMER\",\"revenue\":2310000},{\"region\":\"APAC\",\"revenue\":870000}],\"total\":4420000}"
    And model request 1 for system prompts containing "report writer" ends with a user message containing "Output of llm_analyzer:\n{\"analysis\":\"AMER leads with 2.31M\",\"needs_clarification\":false}"
    And the expression "context.llm_analyzer.needs_clarification == false && context.data_extractor.total == 4420000" is true
    And the output of agent "final_synthesis" is "AMER led Q3 with 2.31M of 4.42M."

  Scenario: An injected analyzer is given the same structured data
    Given agent "llm_analyzer" responds:
      """
      {"needs_clarification": false, "analysis": "EMEA is second"}
      """
    And agent "final_synthesis" responds "EMEA is second."
    When the ensemble runs
    Then the input of agent "llm_analyzer" contains "\"dependencies\":{\"data_extractor\":{\"rows\":[{\"region\":\"EMEA\",\"revenue\":1240000}"
    And the model was called 0 times
    And the run has no errors
