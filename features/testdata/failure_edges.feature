Feature: Edges that fire on failure
  A fallback depends on an agent through an on: failure edge: it runs only
  when that agent fails, is given the failure, and a failure it handled does
  not fail the run.

  Scenario: the dependency succeeds: the fallback does not run
    Given the ensemble:
      """
      name: fallback-unused
      agents:
        - {name: fetch, script: failures/scripts/ok.sh}
        - {name: use, ask: "use?", dependencies: [fetch]}
        - {name: from_cache, ask: "cache?", dependencies: [{agent_name: fetch, on: failure}]}
      """
    And agent "use" responds "used"
    When the ensemble runs
    Then the agents ran in this order: "fetch, use"
    And the exit code is 0

  Scenario: the dependency fails: the fallback is given the failure, handles it, and the run passes
    Given the ensemble:
      """
      name: fallback-used
      agents:
        - {name: fetch, script: failures/scripts/crash.sh}
        - {name: use, ask: "use?", dependencies: [fetch]}
        - {name: from_cache, ask: "cache?", dependencies: [{agent_name: fetch, on: failure}]}
      """
    And agent "from_cache" responds "cached data"
    When the ensemble runs
    Then the agents ran in this order: "fetch, from_cache"
    And the input of agent "from_cache" contains "\"agent\":\"fetch\",\"error\":\"script exited with code 3"
    And the run has 1 error
    And the run has no unhandled errors
    And the exit code is 0
    And the expression "history[1].handles[0].agent_name == 'fetch' && history[1].handles[0].execution == 1" is true

  Scenario: a fallback that fails too leaves the run failed
    Given the ensemble:
      """
      name: fallback-fails
      agents:
        - {name: fetch, script: failures/scripts/crash.sh}
        - {name: from_cache, script: failures/scripts/crash.sh, dependencies: [{agent_name: fetch, on: failure}]}
      """
    When the ensemble runs
    Then the agents ran in this order: "fetch, from_cache"
    And the run has 2 errors
    And the exit code is 1
