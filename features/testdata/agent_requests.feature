Feature: Agent requests trigger their target with parameters
  An agent with triggers_conversation returns agent_requests; each makes
  its target ready in the next turn, with the request's parameters.

  Background:
    Given the ensemble "requests/ensemble.yaml"

  Scenario: The dispatcher requests the worker, which gets the parameters
    Given agent "dispatcher" responds:
      """
      {"direct": false,
       "agent_requests": [{"target_agent_name": "worker", "parameters": {"task": "resize", "size": 3}}]}
      """
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "dispatcher, chatter, worker, auditor"
    And the conversation history is:
      | turn | agent      | execution |
      | 1    | dispatcher | 1         |
      | 1    | chatter    | 1         |
      | 2    | worker     | 1         |
      | 3    | auditor    | 1         |
    And the input of agent "worker" contains "\"request_parameters\":{\"size\":3,\"task\":\"resize\"}"
    And the output of agent "worker" is:
      """
      {"by": "worker", "task": "resize", "size": 3, "requested": true, "dependencies": []}
      """
    # chatter asked for the worker too, but without triggers_conversation
    # its request is ignored: the worker ran once, for the dispatcher.
    And agent "worker" ran 1 time
    And the output of agent "auditor" contains "\"requested\":false"

  Scenario: A request for an unknown agent is an error of the requester; valid ones still run
    Given the model replies "{\"agent_requests\": [{\"target_agent_name\": \"wroker\"}, {\"target_agent_name\": \"worker\", \"parameters\": {\"task\": \"crop\"}}]}" to system prompts containing "Decide which worker"
    When the ensemble runs
    Then agent "dispatcher" failed with an error containing "unknown agents"
    And agent "dispatcher" failed with an error containing "wroker"
    And the run has 1 error
    And agent "worker" ran 1 time
    And the output of agent "worker" contains "\"task\":\"crop\""
    And the exit code is 1

  Scenario: Without a request the worker never runs
    Given agent "dispatcher" responds "{\"direct\": false}"
    When the ensemble runs
    Then the agents ran in this order: "dispatcher, chatter"
    And agent "worker" did not run
    And the run has no errors
