Feature: Ensembles made of ensembles
  An agent with `ensemble: FILE` runs a child ensemble from a fresh state at
  each execution; `loop:` runs it again until a condition holds, and
  `dispatch:` chooses the child file at run time. Steps and injected
  responses name the child's agents by path.

  Scenario: A child ensemble's output agent gives the agent its output
    Given the ensemble "nested/review.yaml"
    And the input "a poem about rain"
    And agent "draft" responds "Rain falls."
    And agent "review_round/critic" responds "Too short."
    And agent "review_round/verdict" responds "{\"approved\": false}"
    When the ensemble runs
    Then the run has no errors
    And the output of agent "review_round" contains "\"approved\":false"
    And agent "review_round/critic" ran 1 time
    And the input of agent "review_round/critic" contains "Output of draft:\nRain falls."
    And the expression "history[1].child.completion_reason == 'completed' && history[1].child.turn_count == 2" is true

  Scenario: A child that fails fails its agent with the child's ending
    Given the ensemble "nested/review.yaml"
    And agent "draft" responds "Rain falls."
    And agent "review_round/critic" responds "Too short."
    When the ensemble runs
    Then agent "review_round/verdict" failed with an error containing "asks a person inside a child ensemble, whose run cannot wait for an answer: give it a response"
    And agent "review_round" failed with an error containing "the child ensemble rounds/review.yaml completed with a failure"

  Scenario: A child that reaches its own timeout fails its agent
    Given the ensemble "nested/slow.yaml"
    When the ensemble runs
    Then agent "slow_round" failed with an error containing "the child ensemble rounds/slow.yaml ended timeout"

  Scenario: A loop runs the child afresh until its condition holds
    Given the ensemble "nested/loop.yaml"
    And the input "add a parser"
    And agent "build_loop/coder" responds "draft 1"
    And agent "build_loop/coder" responds "draft 2"
    And agent "build_loop/check" responds "{\"tests_pass\": false, \"next_input\": \"fix the parser\"}"
    And agent "build_loop/check" responds "{\"tests_pass\": true}"
    When the ensemble runs
    Then the run has no errors
    And agent "build_loop" ran 1 time
    And the output of agent "build_loop" contains "\"tests_pass\":true"
    And the input of agent "build_loop/coder" contains "fix the parser"
    And the expression "history[0].iterations == 2" is true

  Scenario: A loop that exhausts fails
    Given the ensemble "nested/loop.yaml"
    And agent "build_loop/coder" responds "draft"
    And agent "build_loop/coder" responds "draft"
    And agent "build_loop/coder" responds "draft"
    And agent "build_loop/check" responds "{\"tests_pass\": false}"
    And agent "build_loop/check" responds "{\"tests_pass\": false}"
    And agent "build_loop/check" responds "{\"tests_pass\": false}"
    When the ensemble runs
    Then agent "build_loop" failed with an error containing "loop exhausted: until (output.tests_pass == true) was still false after 3 iterations"

  Scenario Outline: Dispatch runs the case its expression names
    Given the ensemble "nested/dispatch.yaml"
    And agent "router" responds "{\"route\": \"<route>\"}"
    And agent "handle/triage" responds "bad"
    And agent "handle/spec" responds "a button"
    When the ensemble runs
    Then the output of agent "handle" contains "<output>"

    Examples:
      | route   | output   |
      | bug     | bad      |
      | feature | a button |

  Scenario: Dispatch without a match and without a default fails
    Given the ensemble "nested/dispatch.yaml"
    And agent "router" responds "{\"route\": \"question\"}"
    When the ensemble runs
    Then agent "handle" failed with an error containing "gave \"question\", which is none of the cases (bug, feature), and there is no default"
