Feature: Output schemas shape what agents return
  An output_schema is sent to the model as its structured output, every
  output is checked against it, a model's wrong reply gets a repair turn
  with the validation errors, and conditions that read a field the schema
  does not have are rejected when the file loads.

  Background:
    Given the ensemble "outputschema/ensemble.yaml"

  Scenario: A reply that fails the schema is repaired and the run goes on
    Given the model replies "{\"approved\": \"yes\"}" to system prompts containing "strict reviewer"
    And the model replies "{\"approved\": true, \"comments\": []}" to system prompts containing "strict reviewer"
    When the ensemble runs
    Then the run has no errors
    And the model was called 2 times
    And model request 2 for system prompts containing "strict reviewer" has the roles "system, user, assistant, user"
    And model request 2 for system prompts containing "strict reviewer" ends with a user message containing "Your reply does not match the required JSON Schema: "
    And model request 2 for system prompts containing "strict reviewer" ends with a user message containing "at '/approved': got string, want boolean"
    And the output of agent "reviewer" is:
      """
      {"approved": true, "comments": []}
      """
    And agent "publisher" ran 1 time

  Scenario: A reply still wrong after the repair fails the execution
    Given the model replies "{\"approved\": \"yes\"}" to system prompts containing "strict reviewer"
    And the model replies "{\"approved\": true}" to system prompts containing "strict reviewer"
    When the ensemble runs
    Then the exit code is 1
    And agent "reviewer" failed with an error containing "the output does not match output_schema: at '/': missing property 'comments'"
    And agent "publisher" did not run

  Scenario: An injected response that fails the schema takes the next one as its repair
    Given agent "reviewer" responds "{\"approved\": 1, \"comments\": []}"
    And agent "reviewer" responds:
      """
      {"approved": true, "comments": ["fine"]}
      """
    When the ensemble runs
    Then the run has no errors
    And the model was called 0 times
    And the input of agent "reviewer" contains "\"injected_response\":2"
    And agent "publisher" ran 1 time

  Scenario: A script output that fails the schema fails the execution
    Given the input "empty"
    When the ensemble runs
    Then the exit code is 1
    And agent "counter" failed with an error containing "the output does not match output_schema: at '/words': minimum: got 0, want 1"
    And agent "reviewer" did not run

  Scenario: A condition reading a field the schema does not have is a load error
    When this ensemble is validated:
      """
      name: typo
      models:
        m: {provider: ollama, model: llama3.2}
      agents:
        - name: reviewer
          model_profile: m
          output_schema: {type: object, properties: {approved: {type: boolean}}}
        - name: publisher
          model_profile: m
          dependencies:
            - agent_name: reviewer
              condition: "context.reviewer?.aproved == true"
      """
    Then the ensemble is invalid with an error containing "condition reads context.reviewer.aproved, but the output_schema of agent \"reviewer\" has no property \"aproved\"; did you mean \"approved\"?"
