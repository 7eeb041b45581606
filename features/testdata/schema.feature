Feature: The schema classifies agents and rejects ambiguous ones
  An agent's kind is the one of script, model_profile, ask, ensemble and dispatch that it has;
  having two is rejected at load time, with a message about mutual
  exclusivity, before anything runs.

  Scenario: Script, LLM and ask agents are classified by their fields
    When the ensemble "schema/kinds.yaml" is validated
    Then the ensemble is valid
    And agent "extractor" is a script agent
    And agent "analyzer" is an LLM agent
    And agent "reviewer" is an ask agent

  Scenario: An agent with both script and model_profile is rejected
    When the ensemble "schema/dual.yaml" is validated
    Then the ensemble is invalid with an error containing "dual.yaml:10:5: agent \"confused\": script, model_profile, ask, ensemble and dispatch are mutually exclusive; found script and model_profile"

  Scenario Outline: Any other combination, or none, is rejected the same way
    When this ensemble is validated:
      """
      name: broken
      models:
        small: {provider: ollama, model: llama3.2}
      agents:
        - {name: odd, <fields>}
      """
    Then the ensemble is invalid with an error containing "agent \"odd\": script, model_profile, ask, ensemble and dispatch are mutually exclusive; <message>"

    Examples:
      | fields                                                                   | message                                   |
      | model_profile: small, ask: "Why?"                                        | found model_profile and ask               |
      | script: schema/scripts/noop.sh, ask: "Why?"                     | found script and ask                      |
      | script: schema/scripts/noop.sh, model_profile: small, ask: "Why?" | found script, model_profile and ask     |
      | dependencies: []                                                         | exactly one is required, found none       |
