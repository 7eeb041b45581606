Feature: Build loop
  The child ensemble rounds/build.yaml runs from a fresh state each round;
  the coder's and critic's replies are injected by path, the test script
  runs for real. The first round's code fails the tests, the second passes.

  Background:
    Given the ensemble "ensemble.yaml"

  Scenario: Two rounds until the tests pass
    Given the responses file "responses.yaml"
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And agent "build_loop" ran 1 time
    And agent "build_loop/coder" ran 2 times
    And the input of agent "build_loop/coder" contains "slugify('  Ensemble  Runs Fast ') gave '--ensemble--runs-fast-'"
    And the output of agent "report" contains "\"tests_pass\":true"
    And the expression "history[0].iterations == 2 && history[0].child.completion_reason == 'completed'" is true

  Scenario: Tests that never pass exhaust the loop
    Given agent "build_loop/coder" responds "def slugify(title):\n    return title\n"
    And agent "build_loop/critic" responds "Nothing is done."
    And the turn limit is 5
    When the ensemble runs
    Then agent "build_loop" failed with an error containing "iteration 2: the child ensemble rounds/build.yaml completed with a failure (coder: agent \"build_loop/coder\": injected responses exhausted"
    And agent "report" did not run
