Feature: Map-reduce
  split.py cuts the input into chunks, summarize fans out over them (one
  instance per chunk, each with its own conversation), and reduce.py merges
  the summaries in chunk order.

  Background:
    Given the ensemble "ensemble.yaml"
    And the responses file "responses.yaml"

  Scenario: Each chunk is summarized, and the summaries are merged in order
    When the ensemble runs
    Then the completion reason is "completed"
    And the run has no errors
    And agent "summarize" ran 1 time
    And agent "summarize" ran over 3 items
    And the agents ran in this order: "split, summarize[0], summarize[1], summarize[2], summarize, reduce"
    And instance "summarize[2]" received "A fan-out runs one agent once per item of a list: one summary per chunk, one review per file."
    And the input of agent "summarize[1]" contains "\"input\":\"Each turn, every agent"
    And the output of agent "summarize[1]" contains "whole turns are committed"
    And the output of agent "reduce" contains "3. A fan-out runs an agent once per list item."
    And the expression "context.reduce.parts == 3 && context.reduce.missing == 0" is true

  Scenario: One instance can be given its own response
    Given agent "summarize[1]" responds:
      """
      {"note": "an injected output is data"}
      """
    And the input:
      """
      One paragraph.

      Another paragraph.
      """
    When the ensemble runs
    Then agent "summarize" ran over 2 items
    And the output of agent "summarize" is:
      """
      ["Ensemble runs YAML workflows of script, model and human agents.", {"note": "an injected output is data"}]
      """
    And the output of agent "reduce" contains "parts\":2"

  Scenario: A chunk that fails is null in the list; the reducer reports it and the run goes on
    Given the input:
      """
      One.

      Two.

      Three.

      Four: the responses file has only three summaries.
      """
    When the ensemble runs
    Then agent "summarize" ran over 4 items
    And agent "summarize[3]" failed with an error containing "injected responses exhausted after 3"
    And agent "summarize" did not fail
    And the output of agent "reduce" contains "4. (no summary: it failed)"
    And the expression "context.reduce.missing == 1" is true
    And the exit code is 1

  Scenario: An input with no text gives an empty list: no instance, and the reducer still runs
    Given the input " "
    When the ensemble runs
    Then the run has no errors
    And agent "summarize" ran over 0 items
    And the agents ran in this order: "split, summarize, reduce"
    And the output of agent "summarize" is "[]"
    And the output of agent "reduce" contains "\"parts\":0"
