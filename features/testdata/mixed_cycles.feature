Feature: Script → LLM → script → LLM cycles with every agent kind
  Human (ask), script and model agents take turns in a loop that runs twice
  and ends when the reviewing model is satisfied.

  Scenario: Two rounds of collect, plan, apply and review, then approval
    Given the ensemble "cycle/ensemble.yaml"
    And agent "request" responds "3 1 3 2"
    And agent "approve" responds "ship it"
    And the model replies "{\"steps\": [\"dedupe\"]}" to system prompts containing "You are the planner"
    And the model replies "{\"steps\": [\"dedupe\", \"sort\"]}" to system prompts containing "You are the planner"
    And the model replies "{\"done\": false, \"why\": \"not sorted\"}" to system prompts containing "You are the reviewer"
    And the model replies "{\"done\": true}" to system prompts containing "You are the reviewer"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "request, collect, plan, apply, review, collect, plan, apply, review, approve"
    And the conversation history is:
      | turn | agent   | execution | output                            |
      | 1    | request | 1         | 3 1 3 2                           |
      | 2    | collect | 1         | {"batch":1,"items":[3,1,3,2]}     |
      | 3    | plan    | 1         | {"steps":["dedupe"]}              |
      | 4    | apply   | 1         | {"result":[3,1,2],"round":1}      |
      | 5    | review  | 1         | "done":false                      |
      | 6    | collect | 2         | {"batch":2,"items":[3,1,3,2]}     |
      | 7    | plan    | 2         | {"steps":["dedupe","sort"]}       |
      | 8    | apply   | 2         | {"result":[1,2,3],"round":2}      |
      | 9    | review  | 2         | {"done":true}                     |
      | 10   | approve | 1         | ship it                           |
    # The models continue their conversations: the planner's second request
    # carries its first exchange and the new batch only.
    And model request 2 for system prompts containing "You are the planner" has the roles "system, user, assistant, user"
    And model request 2 for system prompts containing "You are the planner" ends with a user message containing "Output of collect:\n{\"batch\":2"
    And model request 2 for system prompts containing "You are the reviewer" ends with a user message containing "{\"result\":[1,2,3],\"round\":2}"
    And the input of agent "approve" contains "\"review\":{\"done\":true}"
    And the expression "context.apply.result == [1, 2, 3] && executions.collect == 2 && executions.approve == 1" is true
