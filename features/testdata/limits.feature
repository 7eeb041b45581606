Feature: Limits stop loops
  A cycle with no exit stops at max_total_turns; per-agent max_turns and
  max_agent_executions stop an agent even when the loop could go on.

  Scenario: A potentially infinite cycle stops at max_total_turns
    Given the ensemble "limits/pingpong.yaml"
    And the model replies "pong 1" to system prompts containing "You are pong"
    And the model replies "pong 2" to system prompts containing "You are pong"
    And the model replies "pong 3" to system prompts containing "You are pong"
    When the ensemble runs
    Then the completion reason is "max_total_turns"
    And the exit code is 3
    And the run has no errors
    And the turn count is 6
    And the agents ran in this order: "serve, ping, pong, ping, pong, ping"
    And the output of agent "pong" is "pong 2"
    And the model was called 2 times

  Scenario: The test's turn limit overrides the file's
    Given the ensemble "limits/pingpong.yaml"
    And the turn limit is 3
    And the model replies "pong 1" to system prompts containing "You are pong"
    When the ensemble runs
    Then the completion reason is "max_total_turns"
    And the turn count is 3
    And the agents ran in this order: "serve, ping, pong"

  Scenario: max_agent_executions stops an agent its max_turns would let run
    Given the ensemble "limits/per-agent.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    # left's third output is fresh for right, but right has used the 2
    # executions max_agent_executions gives it, although its max_turns is 10.
    And the agents ran in this order: "start, left, right, left, right, left"
    And agent "left" ran 3 times
    And agent "right" ran 2 times
    And the turn count is 6
    And the output of agent "left" is:
      """
      {"by": "left", "turn": 6, "execution": 3}
      """
    And the expression "turn_count < 20" is true

  Scenario: An agent's max_turns stops it although its partner triggers it again
    Given the ensemble:
      """
      name: max-turns
      input: go
      agents:
        - name: start
          script: limits/scripts/hit.sh
        - name: left
          script: limits/scripts/hit.sh
          dependencies:
            - start
            - agent_name: right
              requires_all: false
          conversation: {max_turns: 2}
        - name: right
          script: limits/scripts/hit.sh
          dependencies: [left]
          conversation: {max_turns: 10}
      """
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    # right's second output is fresh for left, but left has used its 2 turns.
    And the agents ran in this order: "start, left, right, left, right"
    And agent "left" ran 2 times
    And the output of agent "right" is:
      """
      {"by": "right", "turn": 5, "execution": 2}
      """
    And the expression "turn_count == 5 && executions.right == 2" is true

  Scenario: Agent limits that end the loop on the last allowed turn make it completed
    Given the ensemble "limits/per-agent.yaml"
    And the turn limit is 6
    When the ensemble runs
    Then the completion reason is "completed"
    And the exit code is 0
    And the turn count is 6

  Scenario: One turn less, and the turn limit stops it first
    Given the ensemble "limits/per-agent.yaml"
    And the turn limit is 5
    When the ensemble runs
    Then the completion reason is "max_total_turns"
    And the turn count is 5
    And agent "left" ran 2 times
    And agent "right" ran 2 times

  Scenario: An agent's timeout_seconds fails that execution; the run goes on
    Given the ensemble "limits/slow.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    And agent "slow" failed with an error containing "agent timeout of 1s"
    And agent "fast" did not fail
    And agent "after_slow" did not run
    And the exit code is 1

  Scenario: The run's timeout stops the run and its turn is not committed
    Given the ensemble "limits/slow.yaml"
    And the timeout is "300ms"
    When the ensemble runs
    Then the completion reason is "timeout"
    And the exit code is 4
    And the turn count is 0
    And agent "slow" failed with an error containing "timeout"
    And agent "fast" ran 0 times
