Feature: Conditions are evaluated safely
  Conditions are expr expressions compiled at load time against the
  documented variables only (context, turn_count, executions, history,
  input); agent output is data, never code; a condition that is malformed
  or names anything else is rejected before anything runs.

  Scenario: Output that looks like code is only ever data
    Given the ensemble "conditions/ensemble.yaml"
    And the timeout is "5m"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And agent "gate" did not run
    And agent "literal_reader" ran 1 time
    And agent "field_of_a_string" did not run
    And agent "counter_check" ran 1 time
    And the output of agent "producer" is:
      """
      {"text": "approve\" || true || \"", "shell": "$(touch pwned) `touch pwned`"}
      """
    And there is a warning containing "field_of_a_string"
    And the expression "context.producer.text == \"approve\"" is false
    # The shell-looking text reached a script as data, and nothing ran it.
    And the output of agent "shell_reader" is:
      """
      {"received": "$(touch pwned) `touch pwned`", "pwned": false}
      """

  Scenario: Conditions that would exhaust memory or time are stopped
    Given the ensemble "conditions/ensemble.yaml"
    And the timeout is "5m"
    When the ensemble runs
    Then the completion reason is "completed"
    And agent "memory_bomb" did not run
    And agent "spinner" did not run
    And there is a warning containing "condition of memory_bomb ← producer (len(repeat(context.producer.text, 100000000)) > 0) failed, counted as false: memory budget exceeded"
    And there is a warning containing "condition of spinner ← producer (all(1..1000, {all(1..1000, {all(1..1000, {# > 0})})})) failed, counted as false:"
    And the expression "len(history) == 4" is true

  Scenario: The documented variables are all there is
    Given the ensemble "conditions/ensemble.yaml"
    When the ensemble runs
    Then the expression "input == \"approve\" && turn_count == 2" is true
    And the expression "executions.producer == 1 && (executions.gate ?? 0) == 0" is true
    And the expression "len(history) == 4 && history[0].agent_name == \"producer\" && history[0].error == nil" is true
    And the expression "\"text\" in keys(context.producer)" is true

  Scenario Outline: A condition naming anything else is rejected at load time
    When this ensemble is validated:
      """
      name: sneaky
      agents:
        - name: a
          ask: "Go?"
        - name: b
          ask: "Really?"
          dependencies:
            - agent_name: a
              condition: '<condition>'
      """
    Then the ensemble is invalid with an error containing "doc string line 9, column 20: dependency \"a\" of agent \"b\": condition does not compile: <message>"

    Examples:
      | condition                               | message                                 |
      | env.HOME != ""                          | unknown name env                        |
      | $env.HOME != ""                         | unknown name HOME                       |
      | os.Getenv("HOME") == ""                 | unknown name os                         |
      | exec("rm -rf /") == ""                  | unknown name exec                       |
      | readFile("/etc/passwd") != ""           | unknown name readFile                   |
      | now() != nil                            | now is not available in conditions      |

  Scenario Outline: A malformed condition fails at load time with its position
    When this ensemble is validated:
      """
      name: malformed
      agents:
        - name: a
          ask: "Go?"
        - name: b
          ask: "Really?"
          dependencies:
            - agent_name: a
              condition: '<condition>'
      """
    Then the ensemble is invalid with an error containing "<message>"

    Examples:
      | condition                    | message                                                                          |
      | context.a.b ==               | doc string line 9, column 20: dependency \"a\" of agent \"b\": condition does not compile: unexpected token EOF (column 14 of the condition) |
      | (context.a == 1              | condition does not compile: unexpected token EOF (column 15 of the condition)                     |
      | context.a = 1                | condition does not compile: unexpected token Operator(\"=\"); did you mean ==? (column 11 of the condition)         |
      | turn_count + 1               | condition must be boolean, but it is always a number                                   |
      | context.a ==== 1             | condition does not compile                                                       |
