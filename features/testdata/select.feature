Feature: Choosing what an edge delivers
  A dependency's select delivers part of its output; a select that fails
  fails the execution, and the run goes on.

  Scenario: select delivers part of a dependency's output
    Given agent "classifier" responds:
      """
      {"topics": ["go", "yaml"], "confidence": 0.9}
      """
    And agent "writer" responds "written"
    And agent "strict" responds "never"
    Given the ensemble:
      """
      name: select
      agents:
        - {name: classifier, ask: "classify?"}
        - name: writer
          ask: "write?"
          dependencies: [{agent_name: classifier, select: "output.topics"}]
        - name: strict
          ask: "check?"
          dependencies: [{agent_name: classifier, select: "output.missing.field"}]
      """
    When the ensemble runs
    Then the input of agent "writer" contains "\"dependencies\":{\"classifier\":[\"go\",\"yaml\"]}"
    And agent "strict" failed with an error containing "select of dependency \"classifier\" (output.missing.field) failed"
