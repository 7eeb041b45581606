Feature: Joins that wait for every input
  A join inside a loop merges two agents that alternate. By default it runs
  on the first new input and pairs it with the other's previous output;
  with trigger: all it waits for a new output from each.

  Background:
    Given agent "start" responds "go"
    And agent "coder" responds "code 1"
    And agent "coder" responds "code 2"
    And agent "coder" responds "code 3"
    And agent "critic" responds "critique 1"
    And agent "critic" responds "critique 2"
    And agent "critic" responds "critique 3"
    And agent "synth" responds "merged A"
    And agent "synth" responds "merged B"
    And agent "synth" responds "merged C"

  Scenario: trigger: all pairs each round's code with the same round's critique
    Given the ensemble:
      """
      name: join-all
      agents:
        - {name: start, ask: "start?"}
        - name: coder
          ask: "code?"
          dependencies: [start, {agent_name: critic, requires_all: false}]
          conversation: {max_turns: 3}
        - name: critic
          ask: "critique?"
          dependencies: [coder]
          conversation: {max_turns: 3}
        - name: synth
          ask: "merge?"
          trigger: all
          dependencies: [coder, critic]
          conversation: {max_turns: 3}
      """
    Then the ensemble has no warnings
    When the ensemble runs
    Then the completion reason is "completed"
    And the agents ran in this order: "start, coder, critic, coder, synth, critic, coder, synth, critic, synth"
    And the input of agent "synth" contains "\"coder\":\"code 3\",\"critic\":\"critique 3\""
    And the expression "let s = filter(history, .agent_name == 'synth')[1].input_data.dependencies; s.coder == 'code 2' && s.critic == 'critique 2'" is true

  Scenario: the default trigger pairs a new input with a stale one
    Given the ensemble:
      """
      name: join-any
      agents:
        - {name: start, ask: "start?"}
        - name: coder
          ask: "code?"
          dependencies: [start, {agent_name: critic, requires_all: false}]
          conversation: {max_turns: 3}
        - name: critic
          ask: "critique?"
          dependencies: [coder]
          conversation: {max_turns: 3}
        - name: synth
          ask: "merge?"
          dependencies: [coder, critic]
          conversation: {max_turns: 3}
      """
    Then the ensemble has a warning containing "agent \"synth\" joins \"coder\" and \"critic\""
    When the ensemble runs
    Then the completion reason is "completed"
    And the agents ran in this order: "start, coder, critic, coder, synth, critic, synth, coder, synth, critic"
    # synth's second execution got round 2's code with round 1's critique.
    And the expression "let s = filter(history, .agent_name == 'synth')[1].input_data.dependencies; s.coder == 'code 2' && s.critic == 'critique 1'" is true
