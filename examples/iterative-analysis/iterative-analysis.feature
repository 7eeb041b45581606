Feature: Iterative analysis
  The extractor script runs for real; the analyzer asks the user once, then
  analyzes with the clarification, and the synthesis writes the report.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: The analyzer asks for clarification, then reports
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "data_extractor, llm_analyzer, user_clarification, llm_analyzer, final_synthesis"
    And the turn count is 5
    And agent "llm_analyzer" ran 2 times
    And agent "user_clarification" ran 1 time
    And the input of agent "llm_analyzer" contains "Q3 only, EMEA region"
    And the output of agent "llm_analyzer" contains "EMEA grew 12%"
    And the output of agent "final_synthesis" contains "EMEA revenue reached 1.24M"
    And the final state of "extracted_data" is:
      """
      {"source": "Sales figures for Q3",
       "rows": [{"region": "EMEA", "revenue": 1240000},
                {"region": "AMER", "revenue": 2310000},
                {"region": "APAC", "revenue": 870000}]}
      """
    And the expression "context.llm_analyzer.needs_clarification == false" is true
    And the exit code is 0

  Scenario: A confident analyzer skips the user
    Given agent "llm_analyzer" responds:
      """
      {"needs_clarification": false, "analysis": "AMER leads with 2.31M."}
      """
    And agent "final_synthesis" responds "AMER leads Q3."
    When the ensemble runs
    Then the agents ran in this order: "data_extractor, llm_analyzer, final_synthesis"
    And agent "user_clarification" did not run
    And the output of agent "final_synthesis" is "AMER leads Q3."

  Scenario: The human is never asked in a test: the run waits for the answer
    Given agent "llm_analyzer" responds "{\"needs_clarification\": true, \"question\": \"Which region?\"}"
    When the ensemble runs
    Then the run is waiting for input from "user_clarification"
    And agent "user_clarification" did not run
    And agent "final_synthesis" did not run
    And the exit code is 5
