Feature: Budgets and fallbacks
  A run stops when its budget is spent, before the request that would go
  over; a profile whose server is down hands its requests to its fallback.

  Scenario: max_requests stops the run before the third request
    Given the ensemble "budgets/review.yaml"
    And the model replies "draft" to system prompts containing "You are the writer"
    And the model replies "edited" to system prompts containing "You are the editor"
    And the model replies "published" to system prompts containing "You are the publisher"
    When the ensemble runs
    Then the completion reason is "budget_exceeded"
    And the exit code is 6
    And the turn count is 2
    And the agents ran in this order: "writer, editor"
    And the model was called 2 times
    And agent "publisher" ran 0 times

  Scenario: An agent's own budget stops the run
    Given the ensemble:
      """
      name: agent-budget
      models:
        main: {provider: openai, model: main-model, base_url: "${FAKE_MODEL_URL}"}
      agents:
        - name: start
          model_profile: main
          prompt: You are start.
        - name: ping
          model_profile: main
          prompt: You are ping.
          budget: {max_tokens: 15}
          conversation: {max_turns: 3}
          dependencies: [start, {agent_name: pong, requires_all: false}]
        - name: pong
          model_profile: main
          prompt: You are pong.
          conversation: {max_turns: 3}
          dependencies: [ping]
      """
    And the model replies "go" to system prompts containing "You are start"
    And the model replies "one" to system prompts containing "You are ping"
    And the model replies "two" to system prompts containing "You are ping"
    And the model replies "back" to system prompts containing "You are pong"
    When the ensemble runs
    Then the completion reason is "budget_exceeded"
    And the exit code is 6
    # ping's first request spent its 15 tokens: its second is refused.
    And the agents ran in this order: "start, ping, pong"
    And the model was called 3 times
    And the run has 1 error

  Scenario: A 503 sends the request to the fallback profile
    Given the ensemble "budgets/review.yaml"
    And the model "main-model" fails with status 503 "the server is overloaded"
    And the model replies "draft" to system prompts containing "You are the writer"
    And the model replies "edited" to system prompts containing "You are the editor"
    When the ensemble runs
    Then the completion reason is "budget_exceeded"
    And the output of agent "writer" is "draft"
    And the output of agent "editor" is "edited"
    And the model "main-model" was called 2 times
    And the model "backup-model" was called 2 times
    And the expression "history[0].model_profile_used == 'backup' && history[1].model_profile_used == 'backup'" is true

  Scenario: A 400 is not handed to the fallback
    Given the ensemble "budgets/review.yaml"
    And the model "main-model" fails with status 400 "bad request"
    When the ensemble runs
    Then agent "writer" failed with an error containing "400"
    And the model "backup-model" was called 0 times
