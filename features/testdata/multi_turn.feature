Feature: Agents converse over multiple turns with accumulated context
  A model writes, a script edits, and they go back and forth: each turn
  sees what the previous turns produced, and the turn limit bounds it all.

  Background:
    Given the ensemble "conversation/ensemble.yaml"
    And the model replies "Leaves fall" to system prompts containing "You are the writer"
    And the model replies to system prompts containing "You are the writer":
      """
      Leaves fall
      red and gold
      """
    And the model replies to system prompts containing "You are the writer":
      """
      Leaves fall
      red and gold on the path
      the year exhales
      """

  Scenario: The writer revises until the editor accepts, within the turn limit
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And the agents ran in this order: "brief, writer, editor, writer, editor, writer, editor"
    And the turn count is 7
    And the expression "turn_count <= 10" is true
    And agent "writer" ran 3 times
    And agent "editor" ran 3 times
    # The editor's third execution saw every earlier output, its own included.
    And the output of agent "editor" is:
      """
      {"accepted": true, "round": 3, "turn": 7, "saw": ["brief", "editor", "writer"], "previous_round": 2}
      """
    # The writer's conversation goes on: its earlier messages are kept and
    # each new user message brings the editor's latest note.
    And model request 1 for system prompts containing "You are the writer" has the roles "system, user"
    And model request 1 for system prompts containing "You are the writer" ends with a user message containing "Input:\nA haiku about autumn\n\nOutput of brief:\n{\"lines\":3,\"topic\":\"A haiku about autumn\"}"
    And model request 3 for system prompts containing "You are the writer" has the roles "system, user, assistant, user, assistant, user"
    And model request 3 for system prompts containing "You are the writer" ends with a user message containing "2 lines; the brief asks for 3"
    And the output of agent "writer" contains "the year exhales"

  Scenario: The turn limit cuts the conversation short
    Given the turn limit is 4
    When the ensemble runs
    Then the completion reason is "max_total_turns"
    And the exit code is 3
    And the turn count is 4
    And the agents ran in this order: "brief, writer, editor, writer"
    And the model was called 2 times
    And the output of agent "editor" contains "1 lines; the brief asks for 3"
