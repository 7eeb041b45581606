Feature: A simulated user answers for the human
  Injected responses can come from a model given a persona: the user agent
  is played by the "persona" profile, and its answer flows on like a human's.

  Scenario: A sales manager persona answers the analyzer's question
    Given the ensemble "analysis/ensemble.yaml"
    And agent "user_clarification" is simulated by model profile "persona" with the prompt:
      """
      You are Dana, a sales manager who only cares about EMEA in Q3.
      """
    And the model replies "{\"needs_clarification\": true, \"question\": \"Which region matters to you?\"}" to system prompts containing "sales analyst"
    And the model replies "EMEA, and Q3 only." to system prompts containing "You are Dana"
    And the model replies "{\"needs_clarification\": false, \"analysis\": \"EMEA: 1.24M\"}" to system prompts containing "sales analyst"
    And the model replies "EMEA made 1.24M." to system prompts containing "report writer"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "data_extractor, llm_analyzer, user_clarification, llm_analyzer, final_synthesis"
    And the output of agent "user_clarification" is "EMEA, and Q3 only."
    # The persona model was given the persona as its system prompt, and the
    # question the agent asks with the analyzer's output.
    And the model was called 1 time for system prompts containing "You are Dana, a sales manager"
    And model request 1 for system prompts containing "You are Dana" has the roles "system, user"
    And model request 1 for system prompts containing "You are Dana" ends with a user message containing "The analyzer needs clarification."
    And model request 1 for system prompts containing "You are Dana" ends with a user message containing "Which region matters to you?"
    # The simulated answer continues the analyzer's conversation.
    And model request 2 for system prompts containing "sales analyst" ends with a user message containing "Output of user_clarification:\nEMEA, and Q3 only."
    And the model was called 4 times
    And the output of agent "final_synthesis" is "EMEA made 1.24M."

  Scenario: The persona comes from a responses file
    Given the ensemble "analysis/ensemble.yaml"
    And the responses file "analysis/simulated.yaml"
    And the model replies "{\"needs_clarification\": true, \"question\": \"Which region?\"}" to system prompts containing "sales analyst"
    And the model replies "{\"needs_clarification\": false, \"analysis\": \"APAC: 0.87M\"}" to system prompts containing "sales analyst"
    And the model replies "APAC only." to system prompts containing "You are Sam, a finance director"
    And the model replies "APAC made 0.87M." to system prompts containing "report writer"
    When the ensemble runs
    Then the run has no errors
    And the output of agent "user_clarification" is "APAC only."
    And model request 2 for system prompts containing "sales analyst" ends with a user message containing "Output of user_clarification:\nAPAC only."
    And the output of agent "final_synthesis" is "APAC made 0.87M."
